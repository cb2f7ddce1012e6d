import type { ActiveRun } from './active-run';

/** How long a graceful stop, or a cancel, waits for interrupted runs to be recorded. */
export const SHUTDOWN_WAIT_MS = 10_000;
const POLL_MS = 20;

/**
 * The agent processes one service started and still watches (RD runs by Requirement, reviewers
 * by review), and the graceful stop they share: once it began nothing new starts, every watched
 * run is ended (as a `shutdown` unless a person's interrupt is already in flight), and the stop
 * waits, bounded, for their ends to be recorded. An entry is removed by its owner when its end
 * is recorded; `T` is what the owner keeps per run, `runOf` finds the run in it.
 */
export class ActiveRunRegistry<T> {
  private readonly entries = new Map<string, T>();
  private halted = false;

  constructor(
    private readonly kill: (active: ActiveRun) => void,
    private readonly runOf: (entry: T) => ActiveRun,
  ) {}

  /** True once a graceful stop began: no run starts any more. */
  get stopping(): boolean {
    return this.halted;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): T | undefined {
    return this.entries.get(key);
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  set(key: string, entry: T): void {
    this.entries.set(key, entry);
    if (this.halted) {
      // Opened while the stop began: it ends because of the stop, and must say so.
      this.runOf(entry).interruptMode ??= 'shutdown';
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** What the launcher asks once a run's input is ready: has a stop or an interrupt come meanwhile? */
  stopped(active: ActiveRun): () => boolean {
    return () => this.halted || active.interruptMode !== null;
  }

  /**
   * The first step of a graceful stop: from here on no run starts, and every watched run is one
   * the stop ends. Tagged now, not when `stopAll` kills them: a run still preparing sees the stop
   * at once (`stopped`) and ends `cancelled`, and without the tag its end would not say that the
   * manager stopped it (nor leave its session unpaused as a stop's must).
   */
  beginStop(): void {
    this.halted = true;
    for (const entry of this.entries.values()) {
      this.runOf(entry).interruptMode ??= 'shutdown';
    }
  }

  /** A graceful stop: ends every watched run and waits (bounded) until their ends are recorded. */
  async stopAll(): Promise<void> {
    this.beginStop();
    for (const entry of [...this.entries.values()]) {
      const active = this.runOf(entry);
      active.interruptMode ??= 'shutdown';
      this.kill(active);
    }
    await this.until(() => this.entries.size === 0);
  }

  /** Waits (bounded) until the run kept under `key` has its end recorded. */
  gone(key: string): Promise<void> {
    return this.until(() => !this.entries.has(key));
  }

  /** Last resort at the very end of a stop: no agent process outlives the manager. */
  async interruptAll(): Promise<void> {
    const runs = [...this.entries.values()].map((entry) => this.runOf(entry));
    for (const active of runs) {
      active.preparing?.abort();
    }
    await Promise.all(runs.map((active) => active.process?.interrupt().catch(() => undefined)));
  }

  private async until(done: () => boolean): Promise<void> {
    const deadline = Date.now() + SHUTDOWN_WAIT_MS;
    while (!done() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}
