import { Injectable } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';

import type { ManagerEvent } from '@libs/contracts';

/** A committed event with its SSE frame serialized once for every subscriber. */
export interface PublishedEvent {
  event: ManagerEvent;
  frame: string;
}

export function sseFrame(event: ManagerEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** In-process fan-out of committed ManagerEvents, in id order. Only the write path publishes. */
@Injectable()
export class EventBus {
  private readonly subject = new Subject<PublishedEvent>();

  get events$(): Observable<PublishedEvent> {
    return this.subject.asObservable();
  }

  publish(event: ManagerEvent): void {
    this.subject.next({ event, frame: sseFrame(event) });
  }

  complete(): void {
    this.subject.complete();
  }
}
