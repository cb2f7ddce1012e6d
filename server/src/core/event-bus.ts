import { Injectable } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';

import type { ManagerEvent } from '@libs/contracts';

/** A committed event with its SSE frame serialized once for every subscriber. */
export interface PublishedEvent {
  readonly event: ManagerEvent;
  readonly frame: string;
}

/**
 * The frame is serialized on first use: with no SSE client connected (a CLI or a script driving
 * the API) nothing reads it, and a message's event carries the Requirement's snapshot (about
 * 2 KB of JSON), so serializing it anyway was about 2 % of the main thread under `replies`.
 */
class Published implements PublishedEvent {
  private serialized: string | undefined;

  constructor(readonly event: ManagerEvent) {}

  get frame(): string {
    this.serialized ??= sseFrame(this.event);
    return this.serialized;
  }
}

export function sseFrame(event: ManagerEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * In-process fan-out of committed ManagerEvents, in id order. Only the write path publishes, and
 * on a board (team mode) the board's event feed too: other runners commit events this process
 * never sees, so the bus is then sequenced — it publishes an event of this runner's only when it
 * follows the last one published, and otherwise asks the feed to read the gap (and that event)
 * from the events table, which publishes them in order (BoardEventFeed).
 */
@Injectable()
export class EventBus {
  private readonly subject = new Subject<PublishedEvent>();
  private readonly gapSubject = new Subject<void>();
  /** Board mode: the id of the last event published; null when this process is the only writer. */
  private last: number | null = null;

  get events$(): Observable<PublishedEvent> {
    return this.subject.asObservable();
  }

  /** Board mode: a local event did not follow the last one published (another runner's came between). */
  get gaps$(): Observable<void> {
    return this.gapSubject.asObservable();
  }

  /** The id of the last event published (board mode), or null. */
  get lastPublished(): number | null {
    return this.last;
  }

  /** Board mode, from its start: events up to `after` are history (replayed from the table, never published). */
  sequence(after: number): void {
    this.last = after;
  }

  /** A committed event of this process's write path. */
  publish(event: ManagerEvent): void {
    if (this.last !== null) {
      if (event.id <= this.last) {
        return;
      }
      if (event.id !== this.last + 1) {
        this.gapSubject.next();
        return;
      }
      this.last = event.id;
    }
    this.subject.next(new Published(event));
  }

  /**
   * Board mode: an event read from the events table (any runner's), in id order; ids the table no
   * longer has (purged) may be skipped. False when it was published already.
   */
  publishFromBoard(event: ManagerEvent): boolean {
    if (this.last === null || event.id <= this.last) {
      return false;
    }
    this.last = event.id;
    this.subject.next(new Published(event));
    return true;
  }

  complete(): void {
    this.subject.complete();
  }
}
