import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import * as ts from 'typescript';

import { type BlockedConnection, EgressProxy } from './egress-proxy';
import { type HostRule, parseHostRule } from '../core/network/host-rules';
import { InternalAddresses, type NetworkPolicy } from './network-policy';

const rule = (text: string): HostRule => parseHostRule(text) as HostRule;
const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();
const canUnshareNet =
  bwrap !== '' && spawnSync(bwrap, ['--unshare-net', '--ro-bind', '/', '/', '--', 'true']).status === 0;

// What runs inside: each way out the namespace might offer, and what became of it.
const PROBE = `
const http = require('node:http'), net = require('node:net'), dns = require('node:dns');
const [proxyPort, forwarded, unlisted] = process.argv.slice(1).map(Number);
const get = (options) => new Promise((resolve) => {
  const req = http.request(options, (res) => { let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(res.statusCode + ' ' + b.trim())); });
  req.on('error', (e) => resolve(e.code || e.message));
  req.end();
});
const tcp = (port) => new Promise((resolve) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); resolve('connected'); }); s.on('error', (e) => resolve(e.code)); });
(async () => {
  const out = {
    viaProxy: await get({ host: '127.0.0.1', port: proxyPort, path: 'http://127.0.0.1:' + forwarded + '/via-proxy' }),
    refusedByProxy: await get({ host: '127.0.0.1', port: proxyPort, path: 'http://127.0.0.1:' + unlisted + '/nope' }),
    forwarded: await get({ host: '127.0.0.1', port: forwarded, path: '/direct' }),
    directTcp: await tcp(unlisted),
    outsideTcp: await new Promise((resolve) => { const s = net.connect(53, '1.1.1.1'); s.on('connect', () => { s.destroy(); resolve('connected'); }); s.on('error', (e) => resolve(e.code)); }),
    dns: await dns.promises.lookup('example.com').then(() => 'resolved', (e) => e.code),
  };
  process.stdout.write(JSON.stringify(out));
  process.exit(7);
})();
`;

(canUnshareNet ? describe : describe.skip)('the sandbox relay, inside a network namespace of its own', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-relay-'));
  const socketPath = path.join(dir, 'proxy.sock');
  const relay = path.join(dir, 'sandbox-relay.js');
  let origin: http.Server;
  let allowedPort: number;
  let unlistedPort: number;
  let proxy: EgressProxy;
  const blocked: BlockedConnection[] = [];

  beforeAll(async () => {
    const source = fs.readFileSync(path.join(__dirname, 'sandbox-relay.ts'), 'utf8');
    fs.writeFileSync(
      relay,
      ts.transpileModule(source, {
        compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
      }).outputText,
    );
    origin = http.createServer((req, res) => res.end(`origin ${req.url}`));
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    allowedPort = (origin.address() as AddressInfo).port;
    const other = http.createServer((_req, res) => res.end('should not be reached'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    unlistedPort = (other.address() as AddressInfo).port;
    const policy: NetworkPolicy = {
      allow: [],
      deny: [],
      essential: [rule(`127.0.0.1:${allowedPort}`)],
      mode: 'allow_list',
      requirementAllow: [],
    };
    proxy = new EgressProxy({
      internal: new InternalAddresses(),
      onBlocked: (b) => blocked.push(b),
      policy: () => policy,
    });
    await proxy.listen(socketPath);
    (origin as http.Server & { other?: http.Server }).other = other;
  });

  afterAll(async () => {
    await proxy.close();
    await new Promise((r) => origin.close(r));
    await new Promise((r) => (origin as http.Server & { other: http.Server }).other.close(r));
    fs.rmSync(dir, { force: true, recursive: true });
  });

  it('reaches the proxy and the forwarded ports, nothing else, and ends with its command', async () => {
    const args = [
      '--die-with-parent',
      '--unshare-net',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--bind',
      dir,
      dir,
      '--',
    ];
    args.push(
      process.execPath,
      relay,
      socketPath,
      '3128',
      String(allowedPort),
      '-',
      '-',
      '--',
      process.execPath,
      '-e',
      PROBE,
      '3128',
      String(allowedPort),
      String(unlistedPort),
    );
    const child = spawn(bwrap, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, err }).toEqual({ code: 7, err: '' });
    const seen = JSON.parse(out) as Record<string, string>;
    expect(seen.viaProxy).toBe('200 origin /via-proxy');
    expect(seen.refusedByProxy).toBe(
      `403 Agent Manager blocked this connection: 127.0.0.1:${unlistedPort} is not on the allow-list`,
    );
    expect(seen.forwarded).toBe('200 origin /direct');
    // Around the relay there is nothing: the host's loopback, the outside and DNS are out of reach.
    expect(seen.directTcp).toBe('ECONNREFUSED');
    expect(['ENETUNREACH', 'EHOSTUNREACH', 'ECONNREFUSED']).toContain(seen.outsideTcp);
    expect(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED']).toContain(seen.dns);
    expect(blocked).toEqual([
      {
        host: '127.0.0.1',
        method: 'GET',
        port: unlistedPort,
        reason: `127.0.0.1:${unlistedPort} is not on the allow-list`,
      },
    ]);
  });

  it('serves a server the command runs on an exposed port through the expose socket, and nothing else', async () => {
    const exposeSocket = path.join(dir, 'expose.sock');
    // Inside: a server on 4455 (exposed) that names itself; 4456 is exposed too but nothing listens.
    const server = `require('node:http').createServer((q, s) => s.end('inside ' + q.url)).listen(4455, '127.0.0.1', () => console.log('up'))`;
    const child = spawn(
      bwrap,
      [
        '--unshare-net',
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--bind',
        dir,
        dir,
        '--',
        process.execPath,
        relay,
        socketPath,
        '3128',
        '-',
        exposeSocket,
        '4455,4456',
        '--',
        process.execPath,
        '-e',
        server,
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const ask = (line: string, then = '') =>
        new Promise<string>((resolve) => {
          const socket = net.connect(exposeSocket);
          let got = '';
          socket.on('data', (c: Buffer) => (got += c.toString()));
          socket.on('close', () => resolve(got));
          socket.on('error', () => resolve(got));
          socket.write(line + then);
        });
      const answer = await ask('4455\n', 'GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(answer.startsWith('OK\nHTTP/1.1 200 OK')).toBe(true);
      expect(answer.endsWith('inside /hello')).toBe(true);
      expect(await ask('4456\n')).toBe('ERR ECONNREFUSED\n');
      // A port outside the exposed ones is not dialled, whatever listens there.
      expect(await ask('3128\n')).toBe('ERR not_exposed\n');
    } finally {
      // The relay ignores a signal to itself alone: the group's SIGKILL ends it and the server.
      process.kill(-child.pid!, 'SIGKILL');
    }
  });

  it('ignores a signal sent to it alone; one to the run (its process group) ends the command, and the relay as it ended', async () => {
    // Outside a namespace here, so on a port free on this machine; the relay listens before it runs the command.
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as AddressInfo).port;
    await new Promise((r) => free.close(r));
    const child = spawn(process.execPath, [relay, socketPath, String(port), '-', '-', '-', '--', 'sleep', '30'], {
      detached: true,
      stdio: 'ignore',
    });
    const listening = () =>
      new Promise<boolean>((resolve) => {
        const probe = net.connect(port, '127.0.0.1');
        probe.once('connect', () => resolve(probe.destroy() !== null));
        probe.once('error', () => resolve(false));
      });
    const deadline = Date.now() + 15_000;
    while (!(await listening()) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (c, s) => resolve([c, s])),
    );
    child.kill('SIGTERM');
    child.kill('SIGHUP');
    const early = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 500))]);
    expect(early).toBe('still running');
    expect(await listening()).toBe(true);
    process.kill(-child.pid!, 'SIGTERM');
    expect(await exited).toEqual([null, 'SIGTERM']);
  });

  it('refuses what it cannot use, with one line', () => {
    const result = spawnSync(process.execPath, [relay, socketPath, 'x', '-', '-', '-', '--', 'true'], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(125);
    expect(result.stderr).toBe(
      'agent-manager network relay: usage: sandbox-relay <proxy socket> <proxy port> <forwarded ports|-> <expose socket|-> <exposed ports|-> -- <command> [args…]\n',
    );
  });
});
