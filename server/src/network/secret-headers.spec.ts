import { X509Certificate } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import * as tls from 'node:tls';

import { type HostRule, parseHostRule } from '../core/network/host-rules';
import { EgressProxy } from './egress-proxy';
import { InternalAddresses, type NetworkPolicy } from './network-policy';
import { RunCertificates } from './run-certificates';

const commonName = (ca: RunCertificates): string =>
  /CN=([^\n]+)/.exec(new X509Certificate(ca.caPem).subject)?.[1] ?? '';
const rule = (text: string): HostRule => parseHostRule(text) as HostRule;

/** An answer that says which Authorization header the server got, and who it is. */
function echoHeaders(name: string) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        authorization: req.headers.authorization ?? null,
        ...(req.headers.host?.startsWith('evil') || req.headers['x-forwarded-host']
          ? { leaked: req.headers.host }
          : {}),
        server: name,
        url: req.url,
      }),
    );
  };
}

/** Opens a CONNECT tunnel through the proxy and speaks TLS over it, trusting `ca`. */
function throughTunnel(
  proxyPort: number,
  host: string,
  port: number,
  ca: string,
  headers: Record<string, string> = {},
  request: { method?: string; path?: string } = {},
) {
  return new Promise<{ status: number; body: string; issuer: string }>((resolve, reject) => {
    const connect = http.request({ host: '127.0.0.1', method: 'CONNECT', path: `${host}:${port}`, port: proxyPort });
    connect.once('connect', (answer, socket) => {
      if (answer.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`CONNECT answered ${answer.statusCode}`));
        return;
      }
      const secure = tls.connect({ ca, servername: host, socket });
      secure.once('error', reject);
      secure.once('secureConnect', () => {
        const issuer = String(secure.getPeerCertificate().issuer?.CN ?? '');
        const options = { method: request.method ?? 'GET', path: request.path ?? '/private' };
        const req = https.request({ createConnection: () => secure, headers, host, port, ...options }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ body, issuer, status: res.statusCode ?? 0 }));
        });
        req.once('error', reject);
        req.end();
      });
    });
    connect.once('error', reject);
    connect.end();
  });
}

describe('secrets the run’s proxy adds as a header (issue 45)', () => {
  // "The outside": a registry's HTTPS and a plain HTTP server, their certificates from an authority
  // of their own that only the proxy (as the real host's) trusts.
  let outsideCa: RunCertificates;
  let runCa: RunCertificates;
  let secureServer: https.Server;
  let plainServer: http.Server;
  let securePort: number;
  let plainPort: number;
  let proxy: EgressProxy;
  let proxyPort: number;

  beforeAll(async () => {
    [outsideCa, runCa] = await Promise.all([RunCertificates.create(), RunCertificates.create()]);
    secureServer = https.createServer(
      { SNICallback: (name, done) => done(null, outsideCa.contextFor(name)) },
      echoHeaders('secure'),
    );
    plainServer = http.createServer(echoHeaders('plain'));
    await new Promise<void>((r) => secureServer.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => plainServer.listen(0, '127.0.0.1', r));
    securePort = (secureServer.address() as net.AddressInfo).port;
    plainPort = (plainServer.address() as net.AddressInfo).port;
    const policy: NetworkPolicy = {
      allow: [rule(`127.0.0.1:${plainPort}`)],
      deny: [],
      // Essential: taken as written, so their loopback answers are not refused as this machine's.
      essential: [rule('registry.test'), rule('other.test')],
      mode: 'allow_list',
      requirementAllow: [],
    };
    proxy = new EgressProxy({
      certificates: runCa,
      inject: (host, port) =>
        (host === 'registry.test' && port === securePort) || (host === '127.0.0.1' && port === plainPort)
          ? [{ header: 'Authorization', value: 'Bearer s3cret-token' }]
          : [],
      internal: new InternalAddresses({}),
      lookup: () => Promise.resolve(['127.0.0.1']),
      onBlocked: () => undefined,
      policy: () => policy,
      upstreamCa: [outsideCa.caPem],
    });
    await proxy.listen(0);
    proxyPort = proxy.port() as number;
  });

  /** A proxy of its own that lets registry.test alone through and adds `value` to it. */
  const oneHostProxy = (value: string, upstreamCa?: string[]) =>
    new EgressProxy({
      certificates: runCa,
      inject: () => [{ header: 'Authorization', value }],
      internal: new InternalAddresses({}),
      lookup: () => Promise.resolve(['127.0.0.1']),
      onBlocked: () => undefined,
      policy: () => ({
        allow: [],
        deny: [],
        essential: [rule('registry.test')],
        mode: 'allow_list',
        requirementAllow: [],
      }),
      upstreamCa,
    });

  afterAll(async () => {
    await proxy.close();
    await new Promise((r) => secureServer.close(r));
    await new Promise((r) => plainServer.close(r));
  });

  it('adds the header to a plain HTTP request for its host, over whatever the client sent', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        {
          headers: { Authorization: 'Bearer forged', Host: `127.0.0.1:${plainPort}` },
          host: '127.0.0.1',
          path: `http://127.0.0.1:${plainPort}/x`,
          port: proxyPort,
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        },
      );
      req.once('error', reject);
      req.end();
    });
    expect(JSON.parse(body)).toEqual({ authorization: 'Bearer s3cret-token', server: 'plain', url: '/x' });
  });

  it('opens a tunnel to its host under the run’s authority and sends the request on over TLS with the header', async () => {
    const answer = await throughTunnel(proxyPort, 'registry.test', securePort, runCa.caPem);
    expect(answer.status).toBe(200);
    expect(answer.issuer).toBe(commonName(runCa));
    expect(JSON.parse(answer.body)).toEqual({
      authorization: 'Bearer s3cret-token',
      server: 'secure',
      url: '/private',
    });
  });

  it('sends the header to its host alone: the Host the client wrote, an absolute URL or TRACE cannot take it elsewhere', async () => {
    const forged = await throughTunnel(proxyPort, 'registry.test', securePort, runCa.caPem, {
      Host: 'evil.example',
      'X-Forwarded-Host': 'evil.example',
    });
    expect(JSON.parse(forged.body)).toEqual({
      authorization: 'Bearer s3cret-token',
      server: 'secure',
      url: '/private',
    });
    const absolute = await throughTunnel(
      proxyPort,
      'registry.test',
      securePort,
      runCa.caPem,
      {},
      {
        path: 'http://evil.example/p',
      },
    );
    expect(absolute.status).toBe(400);
    expect(absolute.body).toContain('must name a path');
    const trace = await throughTunnel(proxyPort, 'registry.test', securePort, runCa.caPem, {}, { method: 'TRACE' });
    expect(trace.status).toBe(405);
  });

  it('answers 502, and stays up, when a header value cannot be sent', async () => {
    const broken = oneHostProxy('line\nbreak', [outsideCa.caPem]);
    await broken.listen(0);
    try {
      const first = await throughTunnel(broken.port() as number, 'registry.test', securePort, runCa.caPem);
      expect(first.status).toBe(502);
      const again = await throughTunnel(broken.port() as number, 'registry.test', securePort, runCa.caPem);
      expect(again.status).toBe(502);
    } finally {
      await broken.close();
    }
  });

  it('leaves every other tunnel end to end: the client sees the real host’s certificate and no header is added', async () => {
    const answer = await throughTunnel(proxyPort, 'other.test', securePort, outsideCa.caPem);
    expect(answer.status).toBe(200);
    expect(answer.issuer).toBe(commonName(outsideCa));
    expect(JSON.parse(answer.body)).toEqual({ authorization: null, server: 'secure', url: '/private' });
    // The run's authority cannot stand in for a host no secret goes to.
    await expect(throughTunnel(proxyPort, 'other.test', securePort, runCa.caPem)).rejects.toThrow();
  });

  it('checks the real host’s certificate: one it cannot verify is a 502, and the header never leaves', async () => {
    const strict = oneHostProxy('Bearer s3cret-token');
    await strict.listen(0);
    try {
      const answer = await throughTunnel(strict.port() as number, 'registry.test', securePort, runCa.caPem);
      expect(answer.status).toBe(502);
      expect(answer.body).toMatch(/could not reach registry\.test/);
    } finally {
      await strict.close();
    }
  });
});
