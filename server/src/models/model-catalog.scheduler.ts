import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';

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

  constructor(private readonly catalog: ModelCatalogService) {}

  onApplicationBootstrap(): void {
    void this.refreshWhenDue();
  }

  @Interval(HOUR_MS)
  async refreshWhenDue(): Promise<void> {
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
