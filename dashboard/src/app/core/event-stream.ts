import { Injectable, signal } from '@angular/core';
import { Observable, share } from 'rxjs';

import { EVENT_TYPES } from '@libs/contracts';

import { EventCursor } from './live/merge';
import type { ManagerEvent } from './models';

export type ConnectionState = 'connecting' | 'live' | 'offline';

const MAX_BACKOFF_MS = 15_000;

/**
 * The SSE stream as an Observable. The browser's own retry resumes with Last-Event-ID (and the
 * server ends a long replay on purpose, which that retry continues). When the EventSource closes
 * for good (an HTTP error, e.g. while the server restarts) we open a new one with `?after=` from
 * our cursor, backing off. `resumed` fires when a new connection could not resume from a cursor,
 * so LiveSync re-reads the snapshots.
 */
@Injectable({ providedIn: 'root' })
export class EventStream {
  readonly state = signal<ConnectionState>('connecting');
  private readonly cursor = new EventCursor();

  readonly events$ = new Observable<ManagerEvent | 'resync'>((subscriber) => {
    let source: EventSource | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let backoff = 500;
    let opened = false;

    const onEvent = (e: MessageEvent<string>): void => {
      let event: ManagerEvent;
      try {
        event = JSON.parse(e.data) as ManagerEvent;
      } catch {
        return;
      }
      if (this.cursor.accept(event.id)) {
        subscriber.next(event);
      }
    };

    const connect = (): void => {
      source = new EventSource(this.cursor.url('/api/events'));
      this.state.set('connecting');
      // SSE frames are named (`event: <type>`): an EventSource delivers a named frame only to a listener for that name.
      for (const type of EVENT_TYPES) {
        source.addEventListener(type, onEvent as EventListener);
      }
      source.onopen = () => {
        backoff = 500;
        this.state.set('live');
        // A reconnection resumes after the cursor (Last-Event-ID or ?after=); without one it
        // cannot, and whatever happened while it was down must be read again.
        if (opened && this.cursor.lastEventId === null) {
          subscriber.next('resync');
        }
        opened = true;
      };
      source.onerror = () => {
        if (source?.readyState === EventSource.CLOSED) {
          this.state.set('offline');
          source = null;
          retry = setTimeout(connect, backoff);
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        } else {
          this.state.set('connecting');
        }
      };
    };

    connect();
    return () => {
      clearTimeout(retry);
      source?.close();
    };
  }).pipe(share());
}
