import { Clock } from '@server/core/clock';

/**
 * A clock the test moves forward. Time still flows (it is the system clock plus an offset),
 * so timeouts and timestamps behave; `advance` jumps it and tells the scheduler to re-arm.
 */
export class FakeClock extends Clock {
  private offsetMs = 0;
  private readonly listeners = new Set<() => void>();

  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
    this.listeners.forEach((listener) => listener());
  }

  override onAdjusted(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
