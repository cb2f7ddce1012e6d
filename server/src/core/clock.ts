import { Injectable } from '@nestjs/common';

/**
 * The one source of "now", so tests and the scheduler can reason about time in one place.
 * A test passes its own Clock (`startManager({ clock })`) to move time; whoever arms timeouts
 * from "now" listens to `onAdjusted` and re-arms when time moves other than by waiting.
 */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }

  nowIso(): string {
    return this.now().toISOString();
  }

  /** Called when the clock jumps (never, for the system clock). Returns an unsubscribe. */
  onAdjusted(_listener: () => void): () => void {
    return () => undefined;
  }
}
