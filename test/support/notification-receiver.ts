import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A local stand-in for what notifications go to (a webhook endpoint, Slack's incoming webhook, an
 * ntfy server): it records every POST and answers 200, or `failing` times 500 per path first (an
 * outage), or nothing at all while `down` (a receiver that is gone).
 */
export class NotificationReceiver {
  readonly received: Received[] = [];
  private readonly failing = new Map<string, number>();
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<NotificationReceiver> {
    let receiver: NotificationReceiver | undefined;
    const server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => receiver?.answer(req, res, body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new NotificationReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  /** The next `times` requests to `path` are answered 500. */
  fail(path: string, times: number): void {
    this.failing.set(path, times);
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const path = req.url ?? '/';
    this.received.push({ at: Date.now(), body, headers: req.headers, path });
    const left = this.failing.get(path) ?? 0;
    if (left > 0) {
      this.failing.set(path, left - 1);
      res.writeHead(500).end('down for the test');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  }
}
