import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import type { BoardRunnerStatus } from '@libs/contracts';

import type { BoardRunner } from '../core/board/runner-directory';
import { Database } from '../core/database/database.service';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';

/**
 * Team mode: tells every page when a runner comes, goes offline or comes back, or the leadership
 * moves (`board.runners_changed`). A Requirement's `runner.online` is a fact of the board at the
 * time it is read, not a row of the Requirement, so no Requirement event says it changed; without
 * this, an open dashboard would show "on Ada" until a reload. The leader alone writes it, only
 * when what it sees differs from what it last wrote, so the board gets one event per change
 * whatever the number of runners; a new leader writes what it sees first (it cannot know what its
 * predecessor wrote last, and one event too many is harmless).
 */
@Injectable()
export class RunnerWatch implements OnApplicationBootstrap {
  private readonly logger = new Logger(RunnerWatch.name);
  /** What this runner last wrote as leader; null: nothing since it gained the leadership. */
  private written: string | null = null;
  private writing = false;

  constructor(
    private readonly database: Database,
    private readonly events: EventLog,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  onApplicationBootstrap(): void {
    const board = this.runtime.board;
    if (!board) {
      return;
    }
    board.onLeadership(() => {
      this.written = null;
    });
    board.onRunners((runners) => void this.observe(runners));
  }

  private async observe(list: readonly BoardRunner[]): Promise<void> {
    if (!this.runtime.board?.leads || this.writing) {
      return;
    }
    const runners: BoardRunnerStatus[] = list
      .map((r) => ({ host: r.host, id: r.id, leader: r.leader, online: r.online, person: r.personName }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const seen = JSON.stringify(runners);
    if (seen === this.written) {
      return;
    }
    this.writing = true;
    try {
      await this.database.write((tx) =>
        this.events.append(tx, { actor: SYSTEM_ACTOR, payload: { runners }, type: 'board.runners_changed' }),
      );
      this.written = seen;
    } catch (err) {
      this.logger.warn({
        error: (err as Error).message,
        msg: 'could not tell the board its runners changed; the next heartbeat tries again',
      });
    } finally {
      this.writing = false;
    }
  }
}
