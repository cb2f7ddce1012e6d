import { Injectable, signal } from '@angular/core';
import { Observable, share } from 'rxjs';

import { EVENT_TYPES, type ManagerEvent } from '@libs/contracts';

import { EventCursor } from './live/merge';

export type ConnectionState = 'connecting' | 'live' | 'offline';

const MAX_BACKOFF_MS = 15_000;

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * The one place untrusted JSON becomes a ManagerEvent: a frame whose type the contracts do not
 * know (a newer server, a malformed frame) is dropped. Past this check the payload is trusted to
 * be the one its type names (the server appends through the same contract).
 */
export function parseEvent(data: string): ManagerEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const { id, type, payload } = value as { id?: unknown; type?: unknown; payload?: unknown };
  if (
    typeof id !== 'number' ||
    typeof type !== 'string' ||
    !KNOWN_TYPES.has(type) ||
    typeof payload !== 'object' ||
    payload === null
  ) {
    return null;
  }
  return value as ManagerEvent;
}

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
      const event = parseEvent(e.data);
      if (event && this.cursor.accept(event.id)) {
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
