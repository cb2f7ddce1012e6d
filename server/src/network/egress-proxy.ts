import * as dns from 'node:dns';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { type Socket, connect, isIP } from 'node:net';
import * as tls from 'node:tls';

import { normalizeHost } from '../core/network/host-rules';
import { InternalAddresses, type NetworkPolicy, decide } from './network-policy';
import type { RunCertificates } from './run-certificates';

/** A connection the proxy refused: what the run's trace, its event and the blocked list record. */
export interface BlockedConnection {
  host: string;
  port: number;
  reason: string;
  /** CONNECT (a tunnel: HTTPS and the like) or the HTTP method of a plain request. */
  method: string;
}

export interface EgressProxyOptions {
  /** Read for every connection: a change of the rules applies to the next one. */
  policy: () => NetworkPolicy;
  onBlocked: (blocked: BlockedConnection) => void;
  internal?: InternalAddresses;
  /** Name resolution (tests give their own). */
  lookup?: (host: string) => Promise<string[]>;
  /** Open connections at once, tunnels included; past it a new one is refused (503). */
  maxConnections?: number;
  /** A tunnel or request with no byte either way for this long is closed. */
  idleTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * Headers added to requests for a host (a configured secret, issue 45): read for every
   * connection. A plain HTTP request gets them as it passes; a tunnel to such a host is opened
   * here, under `certificates`, so its requests can get them too.
   */
  inject?: (host: string, port: number, tls: boolean) => { header: string; value: string }[];
  /** The authority the run trusts for the tunnels opened to add a header; without it, tunnels are never opened. */
  certificates?: RunCertificates | null;
  /** Authorities trusted besides Node's own for the real host behind an opened tunnel (tests: a local server's). */
  upstreamCa?: string[];
}

/** Where a request read from an opened tunnel goes: the CONNECT's target, at the address checked for it. */
interface TunnelTarget {
  host: string;
  port: number;
  address: string;
}

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
];

async function lookupAll(host: string): Promise<string[]> {
  const answers = await dns.promises.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** `host:port` of a CONNECT target, or null when it is not one. */
function parseAuthority(authority: string): { host: string; port: number } | null {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+):(\d{1,5})$/.exec(authority);
  const port = match ? Number(match[2]) : 0;
  return match && port >= 1 && port <= 65_535 ? { host: normalizeHost(match[1]), port } : null;
}

/**
 * A run's only way out of its network namespace (issue 45): an HTTP proxy on a Unix socket bound
 * into the sandbox. It tunnels CONNECT (HTTPS, anything over TLS) and forwards plain HTTP in
 * absolute form, to the hosts the policy allows; anything else gets a 403 with the reason, and
 * the refusal is reported. A name is resolved here, once, and the connection goes to the address
 * that was checked, so a DNS answer cannot change between the check and the connect.
 */
export class EgressProxy {
  private readonly server: http.Server;
  /** Serves the requests of tunnels opened to add a secret's header. */
  private readonly opened: http.Server;
  private readonly openedTargets = new WeakMap<Socket, TunnelTarget>();
  private readonly internal: InternalAddresses;
  private readonly lookup: (host: string) => Promise<string[]>;
  private readonly sockets = new Set<Socket>();
  private readonly maxConnections: number;
  private readonly idleTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private socketPath: string | null = null;

  constructor(private readonly options: EgressProxyOptions) {
    this.internal = options.internal ?? new InternalAddresses();
    this.lookup = options.lookup ?? lookupAll;
    this.maxConnections = options.maxConnections ?? 256;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10 * 60_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    this.server = http.createServer(
      { headersTimeout: 30_000, requestTimeout: 0, requireHostHeader: false },
      (req, res) => void this.forward(req, res).catch(() => res.destroy()),
    );
    this.opened = http.createServer({ headersTimeout: 30_000, requestTimeout: 0 }, (req, res) => {
      const target = this.openedTargets.get(req.socket);
      if (target) {
        this.send(req, res, { ...target, path: req.url ?? '/', tls: true });
      } else {
        res.destroy();
      }
    });
    this.opened.on('clientError', (_err, socket: Socket) => socket.destroy());
    this.server.on(
      'connect',
      (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
        void this.tunnel(req, socket, head).catch(() => socket.destroy()),
    );
    this.server.on('connection', (socket: Socket) => {
      if (this.sockets.size >= this.maxConnections) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // A client speaking something else, or headers past Node's limit: answered and closed.
    this.server.on('clientError', (_err, socket: Socket) => {
      if (socket.writable) {
        socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      } else {
        socket.destroy();
      }
    });
  }

  /** Listens on a Unix socket (a file only its owner may open), or on a loopback port (`0`: any). */
  async listen(where: string | 0): Promise<void> {
    if (typeof where === 'string') {
      fs.rmSync(where, { force: true });
      this.socketPath = where;
    }
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      const done = () => {
        this.server.off('error', reject);
        resolve();
      };
      if (typeof where === 'string') {
        this.server.listen(where, done);
      } else {
        this.server.listen(0, '127.0.0.1', done);
      }
    });
    if (this.socketPath) {
      fs.chmodSync(this.socketPath, 0o600);
    }
  }

  /** The loopback port when listening on one. */
  port(): number | null {
    const address = this.server.address();
    return address && typeof address === 'object' ? address.port : null;
  }

  /** Open client connections (tunnels included). */
  openConnections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.socketPath) {
      fs.rmSync(this.socketPath, { force: true });
    }
  }

  /**
   * Where a connection to `host:port` may go: the checked address to connect to, or why not.
   * Essential hosts and entries written as IPs are taken as written; any other name must not
   * resolve to this machine or link-local.
   */
  private async resolve(host: string, port: number, method: string): Promise<{ address: string } | { reason: string }> {
    const decision = decide(this.options.policy(), host, port);
    if (!decision.allowed) {
      return this.block(host, port, method, decision.reason);
    }
    const asWritten = decision.essential || decision.rule?.ip === true;
    if (isIP(host) !== 0) {
      return asWritten || !this.internal.has(host)
        ? { address: host }
        : this.block(host, port, method, `${host} is an address of this machine or link-local`);
    }
    let addresses: string[];
    try {
      addresses = await this.lookup(host);
    } catch {
      return this.block(host, port, method, `${host} does not resolve`);
    }
    if (addresses.length === 0) {
      return this.block(host, port, method, `${host} does not resolve`);
    }
    const internal = addresses.find((a) => this.internal.has(a));
    if (internal && !asWritten) {
      return this.block(
        host,
        port,
        method,
        `${host} resolves to ${internal}, an address of this machine or link-local`,
      );
    }
    return { address: addresses[0] };
  }

  private block(host: string, port: number, method: string, reason: string): { reason: string } {
    this.options.onBlocked({ host, method, port, reason });
    return { reason };
  }

  private async tunnel(req: http.IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const target = parseAuthority(req.url ?? '');
    if (!target) {
      client.end(refusal(400, 'Bad Request', `"${String(req.url).slice(0, 200)}" is not host:port`));
      return;
    }
    const where = await this.resolve(target.host, target.port, 'CONNECT');
    if ('reason' in where) {
      client.end(refusal(403, 'Forbidden', where.reason));
      return;
    }
    if (this.options.certificates && (this.options.inject?.(target.host, target.port, true).length ?? 0) > 0) {
      this.open(client, head, { ...target, address: where.address }, this.options.certificates);
      return;
    }
    const upstream = connect({ host: where.address, port: target.port, timeout: this.connectTimeoutMs });
    let established = false;
    upstream.once('timeout', () => upstream.destroy(new Error('connect timed out')));
    upstream.once('connect', () => {
      established = true;
      upstream.setTimeout(this.idleTimeoutMs);
      client.setTimeout(this.idleTimeoutMs);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) {
        upstream.write(head);
      }
      upstream.pipe(client);
      client.pipe(upstream);
      // Either side idle too long or gone: both go.
      for (const [a, b] of [
        [upstream, client],
        [client, upstream],
      ] as const) {
        a.on('timeout', () => a.destroy());
        a.once('close', () => b.destroy());
      }
    });
    upstream.once('error', (err) => {
      if (!established && client.writable) {
        client.end(refusal(502, 'Bad Gateway', `${target.host}:${target.port}: ${err.message}`));
      } else {
        client.destroy();
      }
    });
    client.once('close', () => {
      if (!established) {
        upstream.destroy();
      }
    });
  }

  /**
   * Ends the client's TLS here, presenting a certificate for the target signed by the run's own
   * authority, so its requests can be read, given their header and sent on over TLS to the real
   * host (whose certificate is checked as any client would).
   */
  private open(client: Socket, head: Buffer, target: TunnelTarget, certificates: RunCertificates): void {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) {
      client.unshift(head);
    }
    let context: tls.SecureContext;
    try {
      context = certificates.contextFor(target.host);
    } catch {
      client.destroy();
      return;
    }
    const secure = new tls.TLSSocket(client, { ALPNProtocols: ['http/1.1'], isServer: true, secureContext: context });
    secure.on('error', () => secure.destroy());
    secure.setTimeout(this.idleTimeoutMs, () => secure.destroy());
    this.openedTargets.set(secure, target);
    this.opened.emit('connection', secure);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      url = new URL('invalid:');
    }
    if (url.protocol !== 'http:') {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('Agent Manager: this is a proxy; send http:// URLs in absolute form, or CONNECT for anything else\n');
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const host = normalizeHost(url.hostname);
    const where = await this.resolve(host, port, req.method ?? 'GET');
    if ('reason' in where) {
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`Agent Manager blocked this connection: ${where.reason}\n`);
      return;
    }
    req.headers.host ??= url.host;
    this.send(req, res, { address: where.address, host, path: `${url.pathname}${url.search}`, port, tls: false });
  }

  /** Sends a request on to its checked address, with the headers a secret adds for its host. */
  private send(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    target: TunnelTarget & { path: string; tls: boolean },
  ): void {
    const { host, port } = target;
    const headers = { ...req.headers };
    for (const name of HOP_BY_HOP) {
      delete headers[name];
    }
    const injected = this.options.inject?.(host, port, target.tls) ?? [];
    if (injected.length > 0) {
      // The header is for this host alone: the request must say so, whatever the client wrote.
      // An absolute URL or another Host would let a shared front end (a CDN) route it elsewhere;
      // TRACE would echo it back.
      if (!target.path.startsWith('/')) {
        refuse(res, 400, `a request to ${host} must name a path (origin form), not "${target.path.slice(0, 100)}"`);
        return;
      }
      if (/^(TRACE|TRACK)$/i.test(req.method ?? '')) {
        refuse(res, 405, `${req.method} is not sent to a host that gets a secret`);
        return;
      }
      for (const name of Object.keys(headers)) {
        if (name === 'forwarded' || name.startsWith('x-forwarded-')) {
          delete headers[name];
        }
      }
      const name = isIP(host) === 6 ? `[${host}]` : host;
      headers.host = port === (target.tls ? 443 : 80) ? name : `${name}:${port}`;
      for (const { header, value } of injected) {
        // The configured value wins over whatever the client sent under that name.
        headers[header.toLowerCase()] = value;
      }
    }
    const options: https.RequestOptions = {
      headers,
      host: target.address,
      method: req.method,
      path: target.path,
      port,
      setHost: false,
      timeout: this.idleTimeoutMs,
    };
    let upstream: http.ClientRequest;
    try {
      upstream = this.request(options, host, target.tls);
    } catch (err) {
      refuse(res, 502, `the request to ${host}:${port} could not be sent: ${(err as Error).message}`);
      return;
    }
    upstream.once('response', (answer) => {
      const out = { ...answer.headers };
      for (const name of HOP_BY_HOP) {
        delete out[name];
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, out);
      answer.pipe(res);
    });
    upstream.once('timeout', () => upstream.destroy(new Error('no answer')));
    upstream.once('error', (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(`Agent Manager could not reach ${host}:${port}: ${err.message}\n`);
      } else {
        res.destroy();
      }
    });
    req.pipe(upstream);
    res.once('close', () => upstream.destroy());
  }

  /** The request to the real host: over TLS (an opened tunnel), checked against the name the client asked for. */
  private request(options: https.RequestOptions, host: string, secure: boolean): http.ClientRequest {
    if (!secure) {
      return http.request(options);
    }
    return https.request({
      ...options,
      agent: false,
      ca: this.options.upstreamCa ? [...tls.rootCertificates, ...this.options.upstreamCa] : undefined,
      servername: isIP(host) === 0 ? host : undefined,
      // The certificate must name the host the client asked for, not the address dialled.
      checkServerIdentity: (_name, cert) => tls.checkServerIdentity(host, cert),
    });
  }
}

/** An answer of the proxy's own (never a header of the request's). */
function refuse(res: http.ServerResponse, status: number, reason: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`Agent Manager refused this request: ${reason}\n`);
}

function refusal(status: number, text: string, reason: string): string {
  const body = `Agent Manager blocked this connection: ${reason}\n`;
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
