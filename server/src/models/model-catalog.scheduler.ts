import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';

import { leadsJobs } from '../core/database/postgres/postgres-board';
import { RUNTIME, type Runtime } from '../core/runtime';
import { SYSTEM_ACTOR } from '../events/event-log.service';
import { ModelCatalogService } from './model-catalog.service';

const HOUR_MS = 60 * 60 * 1000;

/**
 * Refreshes the model catalog when it is due (see ModelCatalogService.refreshIsDue): at start,
 * without holding the start up (Codex takes a few seconds to list), and on an hourly check, so a
 * manager that slept through its daily refresh catches up within the hour.
 */
@Injectable()
export class ModelCatalogScheduler implements OnApplicationBootstrap {
  private readonly logger = new Logger(ModelCatalogScheduler.name);

  constructor(
    private readonly catalog: ModelCatalogService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  onApplicationBootstrap(): void {
    // On a board, the leader refreshes (the catalog is the board's).
    this.runtime.board?.onLeadership(() => void this.refreshWhenDue());
    void this.refreshWhenDue();
  }

  @Interval(HOUR_MS)
  async refreshWhenDue(): Promise<void> {
    if (!leadsJobs(this.runtime)) {
      return;
    }
    try {
      if (await this.catalog.refreshIsDue()) {
        await this.catalog.refresh(SYSTEM_ACTOR);
      }
    } catch (error) {
      if (this.catalog.stopping) {
        return; // ended by the shutdown, not a failure of the sources
      }
      this.logger.warn({ err: String(error), msg: 'model catalog refresh failed' });
    }
  }
}
