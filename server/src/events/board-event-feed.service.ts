import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

import { BoardListener } from '../core/database/postgres/board-listener';
import type { PostgresStore } from '../core/database/store';
import { DomainEvents } from '../core/domain-events';
import { EventBus } from '../core/event-bus';
import './board.events';
import { RUNTIME, type Runtime } from '../core/runtime';
import { toManagerEvent } from './event-log.service';
import { EventsRepository } from './events.repository';

/** Rows read per query while catching up. */
const READ_BATCH = 1000;
/** A notification can be lost (a reconnect, a dropped connection): the table is read this often regardless. */
const POLL_MS = 1000;

/**
 * Team mode: every runner's bus (and so every runner's SSE stream) carries every event of the
 * board, in one order (docs/team-mode.md, "Events everywhere"). A batch that commits events
 * NOTIFYs the board's channel with its last id; this feed LISTENs, and on a notification, a gap
 * the bus reports or a 1 s poll, reads the events table after the last id published and
 * publishes what it finds, in id order. The table is the source of truth: since the board's
 * batches commit one after another in id order, a read sees a prefix of the ids, never a hole
 * that fills in later.
 *
 * Not a board: does nothing (the write path is the only publisher).
 */
@Injectable()
export class BoardEventFeed implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(BoardEventFeed.name);
  private readonly store: PostgresStore | null;
  private listener: BoardListener | undefined;
  private poll: NodeJS.Timeout | undefined;
  private reading: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly bus: EventBus,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventsRepository,
    @Inject(RUNTIME) runtime: Pick<Runtime, 'store'>,
  ) {
    this.store = runtime.store.kind === 'postgres' && runtime.store.board ? runtime.store : null;
  }

  async onModuleInit(): Promise<void> {
    if (!this.store) {
      return;
    }
    this.bus.sequence(await this.events.lastId());
    this.bus.gaps$.subscribe(() => this.catchUp());
    this.listener = new BoardListener(
      this.store,
      this.logger,
      (lastEventId) => {
        if (lastEventId > (this.bus.lastPublished ?? 0)) {
          this.catchUp();
        }
      },
      () => this.catchUp(),
    );
    await this.listener.start();
    this.poll = setInterval(() => this.catchUp(), POLL_MS);
    this.poll.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    await this.reading;
    await this.listener?.stop();
  }

  /** Reads and publishes what the board committed after the last id published; calls meanwhile fold into one more read. */
  catchUp(): void {
    if (this.stopped) {
      return;
    }
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.read()
      .catch((err: unknown) =>
        this.logger.warn({
          error: (err as Error).message,
          msg: "could not read the board's events; the next poll retries",
        }),
      )
      .finally(() => {
        this.reading = null;
        if (this.again) {
          this.again = false;
          this.catchUp();
        }
      });
  }

  private async read(): Promise<void> {
    for (;;) {
      const after = this.bus.lastPublished ?? 0;
      const rows = await this.events.after(after, READ_BATCH);
      for (const row of rows) {
        const event = toManagerEvent(row);
        if (this.bus.publishFromBoard(event)) {
          this.domainEvents.notify('board.eventPublished', event);
        }
      }
      if (rows.length < READ_BATCH) {
        return;
      }
    }
  }
}
