import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { type BlockedConnection, EgressProxy } from './egress-proxy';
import { type HostRule, parseHostRule } from '../core/network/host-rules';
import { InternalAddresses, type NetworkPolicy } from './network-policy';

const rule = (text: string): HostRule => parseHostRule(text) as HostRule;

/** Sends raw bytes to the proxy and reads until it closes or `until` matches. */
function raw(target: net.NetConnectOpts, bytes: string, until?: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(target);
    let got = '';
    socket.on('data', (chunk) => {
      got += chunk.toString();
      if (until?.test(got)) {
        socket.destroy();
        resolve(got);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.write(bytes);
  });
}

describe('the egress proxy: a run’s only way out', () => {
  let origin: http.Server;
  let originPort: number;
  let echo: net.Server;
  let echoPort: number;
  let proxy: EgressProxy;
  let blocked: BlockedConnection[];
  let policy: NetworkPolicy;
  const seen: http.IncomingHttpHeaders[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-proxy-'));
  const socketPath = path.join(dir, 'proxy.sock');
  // Names the tests resolve: "outside.test" to a public address nobody listens on (never dialled),
  // "inside.test" to loopback (a rebinding answer), "origin.test" to the loopback origin.
  const names: Record<string, string[]> = {
    'inside.test': ['127.0.0.1'],
    'origin.test': ['127.0.0.1'],
    'outside.test': ['192.0.2.10'],
  };

  beforeAll(async () => {
    origin = http.createServer((req, res) => {
      seen.push(req.headers);
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Origin': 'yes' });
        res.end(`${req.method} ${req.url} ${body}`);
      });
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    originPort = (origin.address() as net.AddressInfo).port;
    echo = net.createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoPort = (echo.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => origin.close(r));
    await new Promise((r) => echo.close(r));
    fs.rmSync(dir, { force: true, recursive: true });
  });

  beforeEach(async () => {
    blocked = [];
    policy = {
      allow: [rule(`127.0.0.1:${echoPort}`), rule(`127.0.0.1:${originPort}`)],
      deny: [],
      essential: [],
      mode: 'allow_list',
      requirementAllow: [],
    };
    proxy = new EgressProxy({
      internal: new InternalAddresses({}),
      lookup: async (host) => {
        if (!names[host]) {
          throw new Error('ENOTFOUND');
        }
        return names[host];
      },
      maxConnections: 4,
      onBlocked: (b) => blocked.push(b),
      policy: () => policy,
    });
    await proxy.listen(socketPath);
  });

  afterEach(() => proxy.close());

  it('listens on a Unix socket only its owner may open', () => {
    expect(fs.statSync(socketPath).mode & 0o777).toBe(0o600);
  });

  it('tunnels CONNECT to an allowed host:port, bytes both ways', async () => {
    const answer = await raw(
      { path: socketPath },
      `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\n\r\nping`,
      /ping$/,
    );
    expect(answer).toBe('HTTP/1.1 200 Connection Established\r\n\r\nping');
    expect(blocked).toEqual([]);
  });

  it('refuses CONNECT to a host not on the list with a 403 and the reason, and reports it', async () => {
    const answer = await raw({ path: socketPath }, 'CONNECT outside.test:443 HTTP/1.1\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(answer).toContain('Agent Manager blocked this connection: outside.test:443 is not on the allow-list');
    expect(blocked).toEqual([
      { host: 'outside.test', method: 'CONNECT', port: 443, reason: 'outside.test:443 is not on the allow-list' },
    ]);
  });

  it('forwards plain HTTP in absolute form, with its body, Host kept and the proxy headers dropped', async () => {
    const answer = await raw(
      { path: socketPath },
      `POST http://127.0.0.1:${originPort}/p?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${originPort}\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('x-origin: yes');
    expect(answer).toContain('POST /p?q=1 body');
    const headers = seen[seen.length - 1];
    expect(headers.host).toBe(`127.0.0.1:${originPort}`);
    expect(headers['proxy-authorization']).toBeUndefined();
    expect(headers['proxy-connection']).toBeUndefined();
  });

  it('answers a refused plain request with a 403 and the reason in the body', async () => {
    const answer = await raw(
      { path: socketPath },
      'GET http://outside.test/ HTTP/1.1\r\nHost: outside.test\r\nConnection: close\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(answer).toContain('Agent Manager blocked this connection: outside.test:80 is not on the allow-list');
    expect(blocked.map((b) => [b.method, b.host, b.port])).toEqual([['GET', 'outside.test', 80]]);
  });

  it('refuses an allowed name that resolves to this machine, but takes an entry written as an IP as written', async () => {
    const machine = new InternalAddresses();
    expect(machine.has('127.0.0.1')).toBe(true);
    expect(machine.has('169.254.169.254')).toBe(true);
    expect(machine.has('::ffff:127.0.0.1')).toBe(true);
    expect(machine.has('192.0.2.10')).toBe(false);
    await proxy.close();
    proxy = new EgressProxy({
      lookup: async (h) => names[h] ?? [],
      onBlocked: (b) => blocked.push(b),
      policy: () => policy,
    });
    await proxy.listen(socketPath);
    policy = { ...policy, allow: [...policy.allow, rule('inside.test')] };
    const answer = await raw({ path: socketPath }, `CONNECT inside.test:${echoPort} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toContain(`inside.test resolves to 127.0.0.1, an address of this machine or link-local`);
    const direct = await raw({ path: socketPath }, `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\n\r\nhi`, /hi$/);
    expect(direct).toMatch(/^HTTP\/1\.1 200/);
  });

  it('lets deny win over allow, offline reach only the essential hosts, and applies a change to the next connection', async () => {
    policy = { ...policy, deny: [rule(`127.0.0.1:${echoPort}`)] };
    expect(await raw({ path: socketPath }, `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\n\r\n`)).toContain(
      `is denied by "127.0.0.1:${echoPort}"`,
    );
    policy = { ...policy, deny: [], essential: [rule(`127.0.0.1:${originPort}`)], mode: 'offline' };
    expect(await raw({ path: socketPath }, `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\n\r\n`)).toContain(
      'the network is offline for agents',
    );
    const essential = await raw(
      { path: socketPath },
      `GET http://127.0.0.1:${originPort}/model HTTP/1.1\r\nConnection: close\r\n\r\n`,
    );
    expect(essential).toMatch(/^HTTP\/1\.1 200/);
    policy = { ...policy, mode: 'allow_list', requirementAllow: [rule('origin.test')] };
    expect(
      await raw({ path: socketPath }, `GET http://origin.test:${originPort}/r HTTP/1.1\r\nConnection: close\r\n\r\n`),
    ).toMatch(/^HTTP\/1\.1 403/); // loopback by name
  });

  it('says what is wrong with what is not a proxy request, and a host that does not answer', async () => {
    expect(await raw({ path: socketPath }, 'GET /direct HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 400[\s\S]*send http:\/\/ URLs in absolute form/,
    );
    expect(await raw({ path: socketPath }, 'CONNECT nonsense HTTP/1.1\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 400[\s\S]*is not host:port/,
    );
    expect(await raw({ path: socketPath }, 'NOT HTTP\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    policy = { ...policy, allow: [rule(`127.0.0.1:${closedPort}`)] };
    expect(await raw({ path: socketPath }, `CONNECT 127.0.0.1:${closedPort} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 502 Bad Gateway[\s\S]*ECONNREFUSED/,
    );
  });

  it('bounds the connections open at once', async () => {
    const tunnels = await Promise.all(
      [1, 2, 3, 4].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect({ path: socketPath }, () =>
              s.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\n\r\n`),
            );
            s.once('data', () => resolve(s));
          }),
      ),
    );
    expect(proxy.openConnections()).toBe(4);
    expect(await raw({ path: socketPath }, `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 503/,
    );
    tunnels.forEach((t) => t.destroy());
  });
});
