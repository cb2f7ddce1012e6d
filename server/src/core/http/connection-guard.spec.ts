import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import * as tls from 'node:tls';

import { Certificate, selfSignedCertificate, temporaryDirectory } from '../../../../test/support/tls-certificate';

import {
  CONNECTION_LIMITS,
  ConnectionGuard,
  ConnectionLimits,
  guardConnections,
  openFileLimit,
} from './connection-guard';

const FAST: ConnectionLimits = {
  checkIntervalMs: 100,
  headersTimeoutMs: 600,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 20,
  requestTimeoutMs: 1_000,
};

/** A socket that sends the start of a request and then one header byte every 100 ms. */
function dripper(port: number): { socket: net.Socket; closed: Promise<{ afterMs: number; data: string }> } {
  const socket = net.connect(port, '127.0.0.1');
  const opened = Date.now();
  let data = '';
  socket.on('data', (c) => (data += c.toString('latin1')));
  socket.on('error', () => undefined);
  socket.once('connect', () => socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
  const drip = setInterval(() => socket.writable && socket.write('a'), 100);
  const closed = new Promise<{ afterMs: number; data: string }>((resolve) =>
    socket.once('close', () => {
      clearInterval(drip);
      resolve({ afterMs: Date.now() - opened, data });
    }),
  );
  return { closed, socket };
}

function get(port: number, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ agent: false, host: '127.0.0.1', path, port }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ body, status: res.statusCode ?? 0 }));
      })
      .on('error', reject);
  });
}

describe(guardConnections.name, () => {
  let server: http.Server;
  let guard: ConnectionGuard;
  let port: number;
  const sockets: net.Socket[] = [];

  beforeEach(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/stream') {
        // Like SSE: headers at once, then a line now and then, for longer than requestTimeout.
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        const tick = setInterval(() => res.write('data: tick\n\n'), 200);
        setTimeout(() => {
          clearInterval(tick);
          res.end('data: done\n\n');
        }, 2_500);
        return;
      }
      res.end('ok');
    });
    guard = guardConnections(server, FAST);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) {
      socket.destroy();
    }
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('has defaults within the documented bounds', () => {
    expect(CONNECTION_LIMITS.headersTimeoutMs).toBeGreaterThanOrEqual(10_000);
    expect(CONNECTION_LIMITS.headersTimeoutMs).toBeLessThanOrEqual(20_000);
    expect(CONNECTION_LIMITS.requestTimeoutMs).toBeGreaterThan(CONNECTION_LIMITS.headersTimeoutMs);
    // Half the file descriptors, at most 4,096 (with this machine's 20,000: 4,096).
    expect(CONNECTION_LIMITS.maxConnections).toBe(Math.max(64, Math.min(4_096, Math.floor(openFileLimit() / 2))));
  });

  it('closes connections that send nothing, or drip their headers, after the header timeout (408), and serves others meanwhile', async () => {
    const silent = net.connect(port, '127.0.0.1');
    silent.on('error', () => undefined).resume();
    sockets.push(silent);
    const silentClosed = new Promise<number>((resolve) => {
      const opened = Date.now();
      silent.once('close', () => resolve(Date.now() - opened));
    });
    const drip = dripper(port);
    sockets.push(drip.socket);
    expect(await get(port)).toEqual({ body: 'ok', status: 200 });

    const dripped = await drip.closed;
    expect(dripped.afterMs).toBeGreaterThanOrEqual(FAST.headersTimeoutMs - 50);
    expect(dripped.afterMs).toBeLessThan(FAST.headersTimeoutMs + 1_500);
    expect(dripped.data).toMatch(/^HTTP\/1\.1 408 /);
    expect(await silentClosed).toBeLessThan(FAST.headersTimeoutMs + 1_500);
    // The client sees its close before the server's side of the socket says so: wait for that, not a time.
    for (let k = 0; k < 200 && guard.counts().open > 0; k++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(guard.counts()).toEqual({ open: 0, waiting: 0 });
  });

  it('at the cap, makes room by closing the oldest connection still waiting for its headers', async () => {
    const drips = Array.from({ length: FAST.maxConnections * 2 }, () => dripper(port));
    sockets.push(...drips.map((d) => d.socket));
    await new Promise((r) => setTimeout(r, 200));
    expect(guard.counts().open).toBeLessThanOrEqual(FAST.maxConnections);
    // A real client sends its headers at once, so it is not the one evicted.
    expect((await get(port)).status).toBe(200);
    const first = await drips[0].closed;
    expect(first.afterMs).toBeLessThan(FAST.headersTimeoutMs);
  });

  it('never cuts a long-lived answer (SSE) by the request timeout', async () => {
    const started = Date.now();
    const res = await get(port, '/stream');
    expect(Date.now() - started).toBeGreaterThan(FAST.requestTimeoutMs * 2);
    expect(res.status).toBe(200);
    expect(res.body).toContain('data: done');
  });
});

describe(`${guardConnections.name} over TLS`, () => {
  let dir: string;
  let certificate: Certificate;
  let server: https.Server;
  let port: number;
  let tlsTo: { ca: Buffer; host: string; port: number; servername: string };

  beforeAll(async () => {
    dir = temporaryDirectory('am-guard-tls-');
    certificate = selfSignedCertificate(dir, 'guard.test', 'DNS:guard.test');
    tlsTo = { ca: certificate.cert, host: '127.0.0.1', port: 0, servername: 'guard.test' };
    server = https.createServer(
      { cert: certificate.cert, handshakeTimeout: FAST.headersTimeoutMs, key: certificate.key },
      (req, res) => {
        if (req.url === '/stream') {
          res.writeHead(200, { 'Content-Type': 'text/event-stream' });
          const tick = setInterval(() => res.write('data: tick\n\n'), 100);
          setTimeout(() => {
            clearInterval(tick);
            res.end('data: done\n\n');
          }, FAST.headersTimeoutMs * 3);
          return;
        }
        res.end('ok');
      },
    );
    guardConnections(server, FAST);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { force: true, recursive: true });
  });

  it('keeps a stream whose request arrived, past the header timeout (its socket is the TLS one)', async () => {
    const started = Date.now();
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get({ ...tlsTo, agent: false, path: '/stream', port }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    expect(Date.now() - started).toBeGreaterThan(FAST.headersTimeoutMs * 2);
    expect(body).toContain('data: done');
  });

  it('answers a TLS connection that sends no request with an encrypted 408, and one that never handshakes is closed', async () => {
    const silent = tls.connect({ ...tlsTo, port });
    let data = '';
    silent.on('data', (c: Buffer) => (data += c.toString('latin1')));
    silent.on('error', () => undefined);
    await new Promise((resolve) => silent.once('close', resolve));
    expect(data).toMatch(/^HTTP\/1\.1 408 /);
    const raw = net.connect(port, '127.0.0.1');
    raw.on('error', () => undefined);
    const opened = Date.now();
    await new Promise((resolve) => raw.once('close', resolve));
    expect(Date.now() - opened).toBeLessThan(FAST.headersTimeoutMs + 1_500);
  });

  it('at the cap, evicts connections that never finish their handshake to admit a real client', async () => {
    const silent = Array.from({ length: FAST.maxConnections * 2 }, () => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      return socket;
    });
    await new Promise((r) => setTimeout(r, 200));
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get({ ...tlsTo, agent: false, path: '/', port }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    expect(body).toBe('ok');
    silent.forEach((socket) => socket.destroy());
  });
});
