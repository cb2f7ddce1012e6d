import * as http from 'node:http';

import { authHeaders } from './http';

export interface SseEvent {
  id: number;
  event: string;
  data: { id: number; type: string; payload: Record<string, unknown>; [key: string]: unknown };
  receivedAt: bigint;
  /** The `data:` line as received. */
  raw: string;
  /** Wall clock at arrival, with sub-millisecond precision. */
  receivedAtMs: number;
}

export interface SseConnection {
  /** Every event received, unless the connection was opened with `keep: false`. */
  events: SseEvent[];
  /** How many events have arrived (kept or not). */
  readonly received: number;
  status: number;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /** Resolves once `count` events have arrived (or rejects after `timeoutMs`); with what was kept. */
  waitFor(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /**
   * Resolves with the first event (already received or still to come) that `matches`. Events
   * arrive in commit order, so once a later event is here an earlier one that did not come never
   * will: a "nothing else happened" check waits on a marker event, not on a fixed sleep.
   */
  waitUntil(matches: (event: SseEvent) => boolean, what: string, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

export interface SseOptions {
  auth?: boolean;
  /** Benchmarks skip parsing (their many clients would measure their own CPU): they read `raw`. */
  parse?: boolean;
  /**
   * False: events are handed to `onEvent` and not kept. A benchmark's fifty clients keeping every
   * frame grew its heap by hundreds of megabytes, and the young-generation collections of the
   * load generator (35–60 ms each, everything survived) became the latencies it reported.
   */
  keep?: boolean;
  onEvent?: (event: SseEvent) => void;
}

/** A minimal SSE reader over a raw HTTP request, so tests see exactly what the server sends. */
export function connectSse(
  url: string,
  headers: Record<string, string> = {},
  { auth = true, parse = true, keep = true, onEvent }: SseOptions = {},
): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    let received = 0;
    const waiters: Array<() => void> = [];
    const req = http.get(
      url,
      { headers: authHeaders(url, { Accept: 'text/event-stream', ...headers }, auth) },
      (res) => {
        let buffer = '';
        let endResolve: () => void = () => undefined;
        const ended = new Promise<void>((r) => (endResolve = r));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let index: number;
          while ((index = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, index);
            buffer = buffer.slice(index + 2);
            const fields: Record<string, string> = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':') || !line.includes(':')) {
                continue;
              }
              const at = line.indexOf(':');
              fields[line.slice(0, at)] = line.slice(at + 1).replace(/^ /, '');
            }
            if (fields.data !== undefined && fields.id !== undefined) {
              const event: SseEvent = {
                data: (parse ? JSON.parse(fields.data) : null) as SseEvent['data'],
                raw: fields.data,
                event: fields.event ?? 'message',
                id: Number(fields.id),
                receivedAt: process.hrtime.bigint(),
                receivedAtMs: performance.timeOrigin + performance.now(),
              };
              received++;
              if (keep) {
                events.push(event);
              }
              onEvent?.(event);
              waiters.splice(0).forEach((w) => w());
            }
          }
        });
        res.on('end', () => {
          endResolve();
          waiters.splice(0).forEach((w) => w());
        });
        res.on('close', () => endResolve());
        resolve({
          close: () => req.destroy(),
          ended,
          events,
          get received() {
            return received;
          },
          status: res.statusCode ?? 0,
          waitFor: (count, timeoutMs = 15_000) =>
            new Promise((done, fail) => {
              const timer = setTimeout(
                () => fail(new Error(`timed out waiting for ${count} events; have ${received}`)),
                timeoutMs,
              );
              const check = () => {
                if (received >= count) {
                  clearTimeout(timer);
                  done(events);
                } else {
                  waiters.push(check);
                }
              };
              check();
            }),
          waitUntil: (matches, what, timeoutMs = 15_000) =>
            new Promise((done, fail) => {
              const timer = setTimeout(
                () => fail(new Error(`timed out waiting for ${what}; have ${events.length} events`)),
                timeoutMs,
              );
              const check = () => {
                const found = events.find(matches);
                if (found) {
                  clearTimeout(timer);
                  done(found);
                } else {
                  waiters.push(check);
                }
              };
              check();
            }),
        });
      },
    );
    req.on('error', reject);
  });
}
