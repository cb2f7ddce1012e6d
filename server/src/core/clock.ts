import { Injectable } from '@nestjs/common';

/** The one source of "now", so tests and the scheduler can reason about time in one place. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }

  nowIso(): string {
    return this.now().toISOString();
  }
}
