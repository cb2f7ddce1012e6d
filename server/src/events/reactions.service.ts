import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { Subscription } from 'rxjs';

import type { ManagerEvent } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { EventBus } from '../core/event-bus';
import { RUNTIME, type Runtime } from '../core/runtime';
import { toManagerEvent } from './event-log.service';
import { EventsRepository } from './events.repository';
import { type CommittedHandler, REACTION, type ReactionMark } from './on-committed';
import { ReactionCursorsRepository } from './reaction-cursors.repository';
import { type LaneState, ReactionLane } from './reaction-lane';

/** The cursors are written this often (when one moved): a crash hands at most this much again. */
const CURSOR_FLUSH_MS = 1000;
/** `GET /api/system/reactions` counts a reaction's backlog up to this many events. */
export const BACKLOG_CAP = 1000;
/** How long a stop waits for the reactions' running calls (a land, a radar pass) before it writes the cursors. */
const STOP_WAIT_MS = 2_000;
/** Outside team mode the cursors' runner. */
const LOCAL_RUNNER = 'local';

export interface ReactionStatus extends LaneState {
  /** Events of its types not handled yet (counted up to BACKLOG_CAP). */
  lag: number;
  /** When the oldest of them was committed. */
  oldestPendingAt: string | null;
}

/**
 * Runs the reactions (`@OnCommitted` methods of every provider) over the committed event log:
 * each from its cursor, live from the event bus once level with the log (docs/architecture.md,
 * "Reactions"). The cursors are this feature's table.
 */
@Injectable()
export class Reactions implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger('Reactions');
  private readonly lanes: ReactionLane[] = [];
  private readonly runner: string;
  private readonly written = new Map<string, number>();
  private subscription: Subscription | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly cursors: ReactionCursorsRepository,
    private readonly database: Database,
    private readonly discovery: DiscoveryService,
    private readonly events: EventsRepository,
    private readonly scanner: MetadataScanner,
    @Inject(RUNTIME) runtime: Pick<Runtime, 'board'>,
  ) {
    this.runner = runtime.board?.runnerId ?? LOCAL_RUNNER;
  }

  /** Finds every reaction once every provider exists. */
  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) {
        continue;
      }
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const marks = Reflect.getMetadata(REACTION, prototype, method) as ReactionMark[] | undefined;
        for (const mark of marks ?? []) {
          const handler = instance[method] as CommittedHandler;
          this.add(`${instance.constructor.name}.${method}`, mark, (events) => handler.call(instance, events));
        }
      }
    }
  }

  private add(reaction: string, mark: ReactionMark, call: CommittedHandler): void {
    if (this.lanes.some((lane) => lane.reaction === reaction)) {
      // Its name is its cursor's key: two reactions on one method would share one cursor.
      throw new Error(`${reaction} is marked @OnCommitted twice: list every event type in one decorator`);
    }
    const lane = new ReactionLane(
      reaction,
      mark.types,
      mark.order,
      call,
      {
        failed: (name, error, retryInMs) =>
          this.logger.warn({
            error: error.message,
            msg: 'a reaction failed; it is retried',
            reaction: name,
            retryInMs,
          }),
        read: async (after, types, limit) =>
          (await this.events.ofTypesAfter(after, types, limit)).map((row) => toManagerEvent(row)),
      },
      () => this.clock.now(),
    );
    this.lanes.push(lane);
    this.lanes.sort((a, b) => a.order - b.order || a.reaction.localeCompare(b.reaction));
  }

  /**
   * Subscribes first (what commits from now on is held), then starts every reaction from its
   * cursor: a reaction seen for the first time starts at the log's end (it is not handed history).
   */
  async onApplicationBootstrap(): Promise<void> {
    this.subscription = this.bus.events$.subscribe(({ event }) => this.offer(event));
    const [stored, last] = await Promise.all([this.cursors.of(this.runner), this.events.lastId()]);
    const fresh = this.lanes.map((lane) => lane.reaction).filter((reaction) => !stored.has(reaction));
    if (fresh.length > 0) {
      await this.database.write(async (tx) =>
        this.cursors.insertMissing(tx, this.runner, fresh, last, this.clock.nowIso()),
      );
      fresh.forEach((reaction) => stored.set(reaction, last));
    }
    for (const lane of this.lanes) {
      this.written.set(lane.reaction, stored.get(lane.reaction) as number);
      // In the background: catching up may take passes (a radar pass, a land) the start must not wait for.
      void lane.start(stored.get(lane.reaction) as number);
    }
    this.flushTimer = setInterval(() => void this.flush(), CURSOR_FLUSH_MS);
    this.flushTimer.unref();
  }

  /**
   * The stop begins (runs are being stopped, and their ends commit): no reaction is called from
   * now on. What commits meanwhile is handed to them at the next start, from their cursors.
   */
  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
    clearInterval(this.flushTimer);
    this.lanes.forEach((lane) => lane.halt());
  }

  /** Before the database stops: the calls running now finish (for a while), then the cursors are written. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.idle(STOP_WAIT_MS)));
    // A flush in flight may hold older positions: the last one writes what they are now.
    await this.flushing;
    await this.flush();
  }

  /** Every reaction: where it is, what it still has to handle, its last failure. */
  async status(): Promise<ReactionStatus[]> {
    return Promise.all(
      this.lanes.map(async (lane) => {
        const state = lane.state();
        const backlog = await this.events.backlog(state.position, state.events, BACKLOG_CAP);
        return { ...state, lag: backlog.count, oldestPendingAt: backlog.oldestAt };
      }),
    );
  }

  private offer(event: ManagerEvent): void {
    for (const lane of this.lanes) {
      lane.offer(event);
    }
  }

  /** Writes the cursors that moved since they were last written (one unit of work). */
  private flush(): Promise<void> {
    if (this.flushing) {
      return this.flushing;
    }
    const moved = this.lanes
      .map((lane) => ({ position: lane.position, reaction: lane.reaction }))
      .filter((c) => c.position > (this.written.get(c.reaction) ?? 0));
    if (moved.length === 0) {
      return Promise.resolve();
    }
    this.flushing = this.database
      .write(async (tx) => this.cursors.move(tx, this.runner, moved, this.clock.nowIso()))
      .then(() => moved.forEach((c) => this.written.set(c.reaction, c.position)))
      .catch((err: unknown) =>
        this.logger.warn({ error: (err as Error).message, msg: 'could not write the reactions’ cursors; retried' }),
      )
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }
}
