import type { ManagerEvent, ManagerEventType } from '@libs/contracts';

/** Events read from the log per query while a reaction catches up. */
export const CATCH_UP_BATCH = 500;
/** Live events held while a reaction catches up, at most: past it they are dropped and read from the log instead. */
export const HELD_MAX = 5_000;
/** A failing reaction is retried after 1 s, then twice as long each time, at most this long. */
export const MAX_BACKOFF_MS = 60_000;

export interface LaneSource {
  /** Committed events of `types` after `after`, ascending, at most `limit`. */
  read(after: number, types: readonly ManagerEventType[], limit: number): Promise<ManagerEvent[]>;
  /** A failed call, for the log. */
  failed(reaction: string, error: Error, retryInMs: number): void;
}

export interface LaneState {
  reaction: string;
  events: ManagerEventType[];
  order: number;
  /** Every event of its types up to this id was handled. */
  position: number;
  /** Calls handed a batch that have not resolved yet. */
  inFlight: number;
  /** Calls that resolved since the start. */
  handled: number;
  /** The ids of the first and last event of the last batch a call resolved, and when. */
  lastHandled: HandledBatch | null;
  /** The same, of the last batch read from the log (at a start, or a retry): what a crash or a failure left. */
  lastCaughtUp: HandledBatch | null;
  /** Calls that threw in a row (0 once one succeeds). */
  failures: number;
  lastError: { message: string; at: string } | null;
  /** When the next try of a failed reaction is due. */
  retryAt: string | null;
}

export interface HandledBatch {
  from: number;
  to: number;
  at: string;
}

interface Call {
  from: number;
  upTo: number;
  settled: boolean;
  /** The lane's generation when it was made: a failure starts a new one, and older calls no longer count. */
  generation: number;
}

/**
 * One reaction's delivery: the committed events of its types from its cursor on. Live events are
 * handed over as they are published; after a start or a failure it reads the log from its
 * position until it is level, holding what is published meanwhile, then goes live again.
 */
export class ReactionLane {
  position = 0;
  private readonly types: Set<ManagerEventType>;
  private readonly calls: Call[] = [];
  private generation = 0;
  /** Reading the log (a start, a retry): live events wait in `held`. */
  private catching = true;
  private held: ManagerEvent[] = [];
  /** More was published while catching up than `held` keeps: the log is read again instead. */
  private heldDropped = false;
  /** The newest event id published (or read), so an event is never taken twice. */
  private seen = 0;
  private handled = 0;
  private lastHandled: HandledBatch | null = null;
  private lastCaughtUp: HandledBatch | null = null;
  private failures = 0;
  private lastError: LaneState['lastError'] = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryAt: number | null = null;
  private stopped = false;
  private catchingUp: Promise<void> | null = null;

  constructor(
    readonly reaction: string,
    readonly events: ManagerEventType[],
    readonly order: number,
    private readonly call: (events: ManagerEvent[]) => Promise<void>,
    private readonly source: LaneSource,
    private readonly now: () => Date,
  ) {
    this.types = new Set(events);
  }

  /** Starts from the stored cursor: reads what came after it, then goes live. */
  start(position: number): Promise<void> {
    this.position = Math.max(this.position, position);
    return this.catchUp();
  }

  /** A committed event, in id order. */
  offer(event: ManagerEvent): void {
    if (this.stopped || event.id <= this.seen) {
      return;
    }
    this.seen = event.id;
    if (this.catching) {
      if (this.types.has(event.type) && !this.heldDropped) {
        this.held.push(event);
        if (this.held.length > HELD_MAX) {
          this.held = [];
          this.heldDropped = true;
        }
      }
      return;
    }
    if (this.types.has(event.type)) {
      this.deliver([event]);
    } else if (this.calls.length === 0) {
      this.position = Math.max(this.position, event.id);
    }
  }

  /** No more calls from now on (a retry due is dropped: the next start hands it again). */
  halt(): void {
    this.stopped = true;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
  }

  /** Resolves once the calls running now settled, or after `limitMs` (what is unfinished is handed again at the next start). */
  async idle(limitMs: number): Promise<void> {
    const until = Date.now() + limitMs;
    while ((this.catchingUp !== null || this.calls.some((c) => !c.settled)) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  state(): LaneState {
    return {
      events: [...this.events],
      failures: this.failures,
      handled: this.handled,
      inFlight: this.calls.filter((c) => !c.settled).length,
      lastCaughtUp: this.lastCaughtUp,
      lastError: this.lastError,
      lastHandled: this.lastHandled,
      order: this.order,
      position: this.position,
      reaction: this.reaction,
      retryAt: this.retryAt === null ? null : new Date(this.retryAt).toISOString(),
    };
  }

  private deliver(batch: ManagerEvent[]): void {
    if (this.stopped) {
      return;
    }
    const call: Call = {
      from: batch[0].id,
      generation: this.generation,
      settled: false,
      upTo: batch[batch.length - 1].id,
    };
    this.calls.push(call);
    // Called now (not after an await): a reaction that starts a pass has started it when the
    // commit's write resolves, as a direct call would have.
    let pending: Promise<void>;
    try {
      pending = this.call(batch);
    } catch (err) {
      pending = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    pending.then(
      () => {
        call.settled = true;
        if (call.generation === this.generation) {
          this.settle();
        }
      },
      (err: unknown) => {
        call.settled = true;
        if (call.generation === this.generation) {
          this.fail(err);
        }
      },
    );
  }

  /** The cursor moves past the calls that resolved with every call before them. */
  private settle(): void {
    while (this.calls.length > 0 && this.calls[0].settled) {
      const done = this.calls.shift() as Call;
      this.handledBatch(done.from, done.upTo);
    }
    if (this.calls.length === 0 && !this.catching) {
      this.position = Math.max(this.position, this.seen);
    }
  }

  private handledBatch(from: number, to: number): void {
    this.position = Math.max(this.position, to);
    this.handled += 1;
    this.lastHandled = { at: this.now().toISOString(), from, to };
    this.failures = 0;
    this.lastError = null;
  }

  /** A call threw: the calls after it no longer count, and the log is read again from the cursor after a wait. */
  private fail(err: unknown): void {
    this.generation += 1;
    this.calls.length = 0;
    this.catching = true;
    this.held = [];
    this.heldDropped = false;
    this.failures += 1;
    const error = err instanceof Error ? err : new Error(String(err));
    this.lastError = { at: this.now().toISOString(), message: error.message };
    const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.failures - 1));
    this.source.failed(this.reaction, error, wait);
    if (this.stopped) {
      return;
    }
    this.retryAt = this.now().getTime() + wait;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.retryAt = null;
      void this.catchUp();
    }, wait);
    this.retryTimer.unref();
  }

  /** Reads the log after the position, a batch at a time, handing each over and awaiting it; then live. */
  private catchUp(): Promise<void> {
    this.catching = true;
    const generation = this.generation;
    this.catchingUp = (async () => {
      try {
        for (;;) {
          if (this.stopped) {
            return;
          }
          const batch = await this.source.read(this.position, this.events, CATCH_UP_BATCH);
          if (this.stopped) {
            return;
          }
          if (batch.length > 0) {
            await this.call(batch);
            this.handledBatch(batch[0].id, batch[batch.length - 1].id);
            this.lastCaughtUp = this.lastHandled;
          }
          if (batch.length === CATCH_UP_BATCH) {
            continue;
          }
          if (this.heldDropped) {
            // More was published meanwhile than is held: read it from the log too.
            this.heldDropped = false;
            this.held = [];
            continue;
          }
          break;
        }
        if (this.stopped) {
          return;
        }
        // Level with the log: what was published meanwhile (after the position) goes out now. The log
        // may have been read past what the bus published (team mode's feed trails the table).
        this.catching = false;
        this.seen = Math.max(this.seen, this.position);
        const held = this.held.filter((e) => e.id > this.position);
        this.held = [];
        if (held.length > 0) {
          this.deliver(held);
        } else {
          this.position = Math.max(this.position, this.seen);
        }
      } catch (err) {
        if (generation === this.generation) {
          this.fail(err);
        }
      } finally {
        this.catchingUp = null;
      }
    })();
    return this.catchingUp;
  }
}
