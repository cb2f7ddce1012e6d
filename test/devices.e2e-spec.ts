import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';

import { LocalTokenService } from '@server/auth/local-token.service';
import { ServingRefused } from '@server/core/http/serving';
import { RunningManager, startManager } from '@server/manager';

import { apiClient, ok, refusal } from './support/api';
import { FakeClock } from './support/fake-clock';
import { initRepository } from './support/git-repo';
import { Json, registerToken, sendUntyped } from './support/http';
import { Sandbox, makeSandbox, runLauncher } from './support/manager-process';
import { selfSignedCertificate } from './support/tls-certificate';
import { until } from './support/wait';

jest.setTimeout(120_000);

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: Json;
}

/** One request over node:http(s), for what fetch() will not do as asked (Host, TLS to a name). */
function request(
  url: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string,
  tls?: { ca: Buffer; servername: string },
): Promise<Reply> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      target,
      { headers, method, ...(tls ? { ca: tls.ca, servername: tls.servername } : {}) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: Json = null;
          try {
            json = JSON.parse(text);
          } catch {
            // HTML or nothing
          }
          resolve({ headers: res.headers, json, status: res.statusCode ?? 0, text });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The device cookie a pairing set, as a Cookie header's pair. */
function deviceCookie(reply: Reply): string {
  const set = (reply.headers['set-cookie'] ?? []).find((c) => c.startsWith('am_device_'));
  if (!set) {
    throw new Error(`no device cookie in ${JSON.stringify(reply.headers)}`);
  }
  return set.split(';')[0] ?? '';
}

function startOn(sandbox: Sandbox, options: Partial<Parameters<typeof startManager>[0]> = {}): Promise<RunningManager> {
  return startManager({
    env: { ...process.env, CODE_FACTORY_HOME: sandbox.home, GH_TOKEN: '', GITHUB_TOKEN: '' },
    overrides: { port: 0 },
    workspace: sandbox.workspace,
    ...options,
  });
}

// Issue 47 §4: a phone paired through a one-time link gets a credential of its own (never the
// owner token), which acts for the person but cannot reach the agent API, the settings or another
// pairing; a used or expired link is 410; a revoked device is refused at once and its open event
// stream ends. Beyond loopback the manager serves only over TLS (or plain HTTP chosen explicitly),
// answering to its certificate's names. A real in-process server, a real SQLite file, the real CLI.
describe('pairing a phone', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const clock = new FakeClock();
  const api = () => apiClient(manager.url);
  const origin = () => ({ Origin: manager.url });

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startOn(sandbox, { clock });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('pairs a browser once through the link, with a credential that is not the owner token', async () => {
    const pairing = await ok(api().POST('/api/devices/pairings', { body: { name: 'Pixel' } }));
    expect(pairing.url).toMatch(new RegExp(`^${manager.url}/pair/[A-Za-z0-9_-]{43}$`));
    expect(pairing.qrCode).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(pairing.qrCode.split(',')[1] ?? '', 'base64').toString()).toContain('<svg');
    expect(Date.parse(pairing.expiresAt) - clock.now().getTime()).toBeGreaterThan(9 * 60_000);
    expect(pairing.reachability).toBe('loopback_only');

    // Opening the link (a chat app's preview) spends nothing.
    const page = await request(pairing.url, 'GET');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form method="post">');
    expect(page.text).toContain('value="Pixel"');
    expect((await request(pairing.url, 'GET')).status).toBe(200);

    const paired = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      'name=My+%3Cb%3Ephone%3C%2Fb%3E',
      undefined,
    );
    expect(paired.status).toBe(303);
    expect(paired.headers.location).toBe('/attention');
    const set = (paired.headers['set-cookie'] ?? []).join('\n');
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).not.toMatch(/Secure/); // plain HTTP on loopback: a Secure cookie would never come back
    const cookie = deviceCookie(paired);
    expect(cookie).not.toContain(manager.app.get(LocalTokenService).value);

    // Used: 410 on both the page and the form, and no second cookie.
    const again = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      'name=x',
    );
    expect(again.status).toBe(410);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.text).toContain('already used');
    expect((await request(pairing.url, 'GET')).status).toBe(410);

    // The device acts for the person: it reads, writes as them, and sees itself.
    const devices = await sendUntyped(manager.url, 'GET', '/api/devices', undefined, { Cookie: cookie });
    expect(devices.status).toBe(200);
    const mine = (devices.json.items as Json[]).find((d) => d.current === true);
    expect(mine).toMatchObject({ name: 'My <b>phone</b>' });
    const created = await sendUntyped(
      manager.url,
      'POST',
      '/api/requirements',
      { provider: 'codex', title: 'Phone work' },
      { Cookie: cookie, ...origin() },
    );
    expect({ body: created.json, status: created.status }).toMatchObject({ status: 201 });
    // The owner sees the device, not as current.
    const listed = await ok(api().GET('/api/devices'));
    expect(listed.items.find((d) => d.id === mine.id)).toMatchObject({ current: false, name: 'My <b>phone</b>' });
    expect(listed.items.every((d) => d.current === false)).toBe(true);
  });

  it('keeps a device off the agent API, the settings and further pairings', async () => {
    const cookie = await pairedCookie();
    for (const [method, route, body] of [
      ['POST', '/api/devices/pairings', {}],
      ['PATCH', '/api/configuration', { logLevel: 'debug' }],
      ['GET', '/api/agent/context', undefined],
    ] as const) {
      const refused = await sendUntyped(manager.url, method, route, body, { Cookie: cookie, ...origin() });
      expect({ code: refused.json.code, route, status: refused.status }).toEqual({
        code: 'device_not_allowed',
        route,
        status: 403,
      });
    }
    expect((await ok(api().GET('/api/configuration'))).effective.logLevel).not.toBe('debug');
    // Reading the settings is fine; the device is the person's.
    expect((await sendUntyped(manager.url, 'GET', '/api/configuration', undefined, { Cookie: cookie })).status).toBe(
      200,
    );
  });

  it('refuses an expired link, a link never issued, and a form larger than a name', async () => {
    const pairing = await ok(api().POST('/api/devices/pairings', { body: {} }));
    expect(pairing.name).toBe('Phone');
    const tooBig = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      `name=${'x'.repeat(8000)}`,
    );
    expect(tooBig.status).toBe(413);
    clock.advance(10 * 60_000 + 1000);
    const expired = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      '',
    );
    expect(expired.status).toBe(410);
    expect(expired.text).toContain('expired');
    expect((await request(pairing.url, 'GET')).status).toBe(410);
    expect((await request(`${manager.url}/pair/${'A'.repeat(43)}`, 'GET')).status).toBe(404);
    expect((await request(`${manager.url}/pair/short`, 'POST', origin(), '')).status).toBe(404);
    // Another site's page cannot post the form (CSRF): the Origin check comes first.
    const pairing2 = await ok(api().POST('/api/devices/pairings', { body: {} }));
    const forged = await request(pairing2.url, 'POST', { Origin: 'http://evil.example' }, '');
    expect(forged.status).toBe(403);
    expect((await request(pairing2.url, 'GET')).status).toBe(200);
  });

  it('cancels a shown link: 410 from then on; a device may not cancel one', async () => {
    const pairing = await ok(api().POST('/api/devices/pairings', { body: {} }));
    const cookie = await pairedCookie('Canceller');
    const byDevice = await sendUntyped(manager.url, 'DELETE', `/api/devices/pairings/${pairing.id}`, undefined, {
      Cookie: cookie,
      ...origin(),
    });
    expect(byDevice.json.code).toBe('device_not_allowed');
    expect((await request(pairing.url, 'GET')).status).toBe(200);
    await ok(api().DELETE('/api/devices/pairings/{id}', { params: { path: { id: pairing.id } } }));
    expect((await request(pairing.url, 'GET')).status).toBe(410);
    const posted = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      '',
    );
    expect(posted.status).toBe(410);
    await refusal(
      api().DELETE('/api/devices/pairings/{id}', { params: { path: { id: 'pair_nope' } } }),
      404,
      'pairing_not_found',
    );
  });

  it('pairs exactly one browser when the link is used twice at once', async () => {
    const pairing = await ok(api().POST('/api/devices/pairings', { body: {} }));
    const before = (await ok(api().GET('/api/devices'))).items.length;
    const replies = await Promise.all(
      [1, 2, 3, 4].map(() =>
        request(pairing.url, 'POST', { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() }, ''),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([303, 410, 410, 410]);
    expect((await ok(api().GET('/api/devices'))).items.length).toBe(before + 1);
  });

  it('revokes a device at once: its open event stream ends and its next request is refused', async () => {
    const cookie = await pairedCookie('Tablet');
    const id = (await sendUntyped(manager.url, 'GET', '/api/devices', undefined, { Cookie: cookie })).json.items.find(
      (d: Json) => d.current,
    ).id as string;
    let ended = false;
    let received = '';
    const stream = http.get(
      `${manager.url}/api/events`,
      { headers: { Accept: 'text/event-stream', Cookie: cookie } },
      (res) => {
        expect(res.statusCode).toBe(200);
        res.setEncoding('utf8');
        res.on('data', (c: string) => (received += c));
        res.on('close', () => (ended = true));
      },
    );
    stream.on('error', () => (ended = true));
    await until('the stream opened', async () => received.length > 0, 10_000);
    await ok(api().DELETE('/api/devices/{id}', { params: { path: { id } } }));
    await until('the stream ended', async () => ended, 2000);
    const refused = await sendUntyped(manager.url, 'GET', '/api/requirements', undefined, { Cookie: cookie });
    expect(refused.status).toBe(401);
    expect(refused.json.code).toBe('device_revoked');
    expect((await ok(api().GET('/api/devices'))).items.some((d) => d.id === id)).toBe(false);
    await refusal(api().DELETE('/api/devices/{id}', { params: { path: { id } } }), 404, 'device_not_found');
  });

  it('lets a device revoke itself (its 204 arrives first), and a browser paired again keeps one credential', async () => {
    const first = await pairedCookie('Old phone');
    const firstId = await currentId(first);
    // The same browser pairs again (its old cookie sent along): the old credential goes with it.
    const pairing = await ok(api().POST('/api/devices/pairings', { body: { name: 'New phone' } }));
    const again = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: first, ...origin() },
      '',
    );
    expect(again.status).toBe(303);
    const second = deviceCookie(again);
    expect((await sendUntyped(manager.url, 'GET', '/api/devices', undefined, { Cookie: first })).status).toBe(401);
    const secondId = await currentId(second);
    const listed = (await ok(api().GET('/api/devices'))).items;
    expect(listed.some((d) => d.id === firstId)).toBe(false);
    expect(listed.find((d) => d.id === secondId)).toMatchObject({ name: 'New phone', pairingId: pairing.id });

    const self = await sendUntyped(manager.url, 'DELETE', `/api/devices/${secondId}`, undefined, {
      Cookie: second,
      ...origin(),
    });
    expect(self.status).toBe(204);
    const after = await sendUntyped(manager.url, 'GET', '/api/requirements', undefined, { Cookie: second });
    expect(after.json.code).toBe('device_revoked');
  });

  it('prints a link and its QR code from `agent-manager pair`', async () => {
    const printed = await runLauncher(sandbox, ['pair', '--name', 'Desk phone', '--workspace', sandbox.workspace]);
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('Pair "Desk phone"');
    expect(printed.stdout).toMatch(/[█▀▄]{10}/);
    const link = /(http:\/\/\S+\/pair\/\S+)/.exec(printed.stdout)?.[1] ?? '';
    expect((await request(link, 'GET')).status).toBe(200);
    expect(printed.stdout).toContain('loopback');
  });

  async function currentId(cookie: string): Promise<string> {
    const listed = await sendUntyped(manager.url, 'GET', '/api/devices', undefined, { Cookie: cookie });
    return (listed.json.items as Json[]).find((d) => d.current === true).id as string;
  }

  async function pairedCookie(name = 'Phone'): Promise<string> {
    const pairing = await ok(api().POST('/api/devices/pairings', { body: { name } }));
    const paired = await request(
      pairing.url,
      'POST',
      { 'Content-Type': 'application/x-www-form-urlencoded', ...origin() },
      '',
    );
    expect(paired.status).toBe(303);
    return deviceCookie(paired);
  }
});

describe('serving beyond loopback', () => {
  let sandbox: Sandbox;
  let certs: string;

  beforeAll(() => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    certs = fs.mkdtempSync(path.join(os.tmpdir(), 'am-certs-'));
    const make = (name: string, san: string) => selfSignedCertificate(certs, name, san);
    make('phone.test', 'DNS:phone.test,IP:127.0.0.1');
    make('other.test', 'DNS:other.test');
  });

  afterAll(() => {
    sandbox?.cleanup();
    fs.rmSync(certs, { force: true, recursive: true });
  });

  it('refuses plain HTTP beyond loopback unless asked for, and a certificate that does not load', async () => {
    const wildcard = { host: '0.0.0.0', port: 0 };
    await expect(startOn(sandbox, { overrides: wildcard })).rejects.toThrow(ServingRefused);
    await expect(startOn(sandbox, { overrides: wildcard })).rejects.toThrow(
      /requires TLS.*--tls-cert.*--insecure-http/,
    );
    await expect(
      startOn(sandbox, { overrides: wildcard, serving: { tlsCertPath: path.join(certs, 'phone.test.crt') } }),
    ).rejects.toThrow(/go together/);
    await expect(
      startOn(sandbox, {
        overrides: wildcard,
        serving: { tlsCertPath: path.join(certs, 'phone.test.crt'), tlsKeyPath: path.join(certs, 'other.test.key') },
      }),
    ).rejects.toThrow(/other\.test\.key is not the key of the certificate/);
    await expect(
      startOn(sandbox, {
        overrides: wildcard,
        serving: { tlsCertPath: path.join(certs, 'missing.crt'), tlsKeyPath: path.join(certs, 'other.test.key') },
      }),
    ).rejects.toThrow(/missing\.crt cannot be read: ENOENT/);
    // Nothing was left behind: the explicit choice starts at once (the lock was never taken).
    const insecure = await startOn(sandbox, { overrides: wildcard, serving: { insecureHttp: true } });
    try {
      expect(insecure.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await insecure.stop();
    }
    // And the CLI says so in one line.
    const refused = await runLauncher(sandbox, [
      'start',
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--workspace',
      sandbox.workspace,
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/requires TLS/);
  });

  it('serves TLS on its certificate names, with Host and Origin checked against them and Secure cookies', async () => {
    const manager = await startOn(sandbox, {
      overrides: { host: '0.0.0.0', port: 0 },
      serving: { tlsCertPath: path.join(certs, 'phone.test.crt'), tlsKeyPath: path.join(certs, 'phone.test.key') },
    });
    try {
      const port = new URL(manager.url).port;
      expect(manager.url).toBe(`https://phone.test:${port}`);
      const token = manager.app.get(LocalTokenService).value;
      const tls = { ca: fs.readFileSync(path.join(certs, 'phone.test.crt')), servername: 'phone.test' };
      const at = (route: string) => `https://127.0.0.1:${port}${route}`;
      const owner = { Authorization: `Bearer ${token}`, Host: `phone.test:${port}` };

      const health = await request(at('/api/health'), 'GET', { Host: `phone.test:${port}` }, undefined, tls);
      expect(health.status).toBe(200);
      expect(health.headers['strict-transport-security']).toMatch(/max-age=\d+/);
      // Never for a loopback name: it would pin every other local server's port to HTTPS.
      const local = await request(at('/api/health'), 'GET', { Host: `127.0.0.1:${port}` }, undefined, tls);
      expect(local.status).toBe(200);
      expect(local.headers['strict-transport-security']).toBeUndefined();
      expect((await request(at('/api/health'), 'GET', { Host: `evil.example:${port}` }, undefined, tls)).status).toBe(
        403,
      );
      // Plain HTTP on the TLS port is no way around it.
      await expect(request(`http://127.0.0.1:${port}/api/health`, 'GET')).rejects.toThrow();

      // The Origin of a page served over TLS is https://…; the plain-HTTP spelling is another site.
      const body = JSON.stringify({ provider: 'codex', title: 'over TLS' });
      const json = { 'Content-Type': 'application/json', ...owner };
      const fromHttp = await request(
        at('/api/requirements'),
        'POST',
        { ...json, Origin: `http://phone.test:${port}` },
        body,
        tls,
      );
      expect(fromHttp.status).toBe(403);
      expect(fromHttp.json.code).toBe('origin_not_allowed');
      const fromHttps = await request(
        at('/api/requirements'),
        'POST',
        { ...json, Origin: `https://phone.test:${port}` },
        body,
        tls,
      );
      expect(fromHttps.status).toBe(201);

      // The pairing link names the certificate's host, and the cookies it sets are Secure.
      const pairing = await request(at('/api/devices/pairings'), 'POST', json, '{}', tls);
      expect(pairing.status).toBe(201);
      expect(pairing.json.url).toMatch(new RegExp(`^https://phone\\.test:${port}/pair/`));
      expect(pairing.json.reachability).toBeNull();
      const linkPath = new URL(pairing.json.url as string).pathname;
      const paired = await request(
        at(linkPath),
        'POST',
        {
          'Content-Type': 'application/x-www-form-urlencoded',
          Host: `phone.test:${port}`,
          Origin: `https://phone.test:${port}`,
        },
        '',
        tls,
      );
      expect(paired.status).toBe(303);
      expect((paired.headers['set-cookie'] ?? []).join('\n')).toMatch(/^__Host-am_device_\d+=[0-9a-f]{64};.*Secure/);
      const login = await request(at(`/?token=${token}`), 'GET', { Host: `phone.test:${port}` }, undefined, tls);
      expect(login.status).toBe(303);
      expect((login.headers['set-cookie'] ?? []).join('\n')).toMatch(/^__Host-am_session_\d+=.*Secure/);
    } finally {
      await manager.stop();
    }
  });
});
