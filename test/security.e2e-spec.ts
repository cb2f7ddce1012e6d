import * as fs from 'node:fs';
import * as path from 'node:path';

import { apiClient, ok } from './support/api';
import { type Json, sendRaw, sendUntyped } from './support/http';
import { expectRefused as refused } from './support/refusals';
import { ManagerProcess, Sandbox, makeSandbox, runLauncher, startManager } from './support/manager-process';
import { connectSse } from './support/sse-client';

const NO_AUTH = { auth: false };

// This suite is about what travels on the wire: credentials present, missing, forged or in the
// query, Origin and Cookie headers, CORS preflights, hand-encoded paths, dashboard pages. Those
// requests stay untyped on purpose (sendUntyped); plain calls use the typed client.

describe('Secure by default: attacks against a real server', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let requirementId: string;
  let port: string;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({ args: ['--allow-origin', 'http://localhost:4200'], sandbox });
    port = new URL(manager.origin).port;
    requirementId = (await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'target' } })))
      .id;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const expectRefused = (request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string) =>
    refused(manager.dataDirectory(), request, status, code);

  const writes = (headers: Record<string, string>) => [
    () =>
      sendUntyped(
        manager.origin,
        'POST',
        '/api/requirements',
        { provider: 'codex', title: 'intruder' },
        headers,
        NO_AUTH,
      ),
    () =>
      sendUntyped(
        manager.origin,
        'POST',
        `/api/requirements/${requirementId}/reply`,
        { message: 'rm -rf ~' },
        headers,
        NO_AUTH,
      ),
    () =>
      sendUntyped(
        manager.origin,
        'POST',
        `/api/requirements/${requirementId}/attachments`,
        'payload',
        { 'X-File-Name': 'x.sh', ...headers },
        NO_AUTH,
      ),
    () => sendUntyped(manager.origin, 'DELETE', `/api/requirements/${requirementId}`, undefined, headers, NO_AUTH),
    () => sendUntyped(manager.origin, 'PATCH', '/api/configuration', { authentication: 'none' }, headers, NO_AUTH),
    () => sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, headers, NO_AUTH),
    () => sendUntyped(manager.origin, 'GET', '/api/openapi.json', undefined, headers, NO_AUTH),
    () => sendUntyped(manager.origin, 'GET', '/api/docs', undefined, headers, NO_AUTH),
  ];

  it('keeps the token in a file only the user can read', () => {
    const file = path.join(manager.dataDirectory(), 'token');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(manager.token).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers health without credentials', async () => {
    expect((await apiClient(manager.origin, { auth: false }).GET('/api/health')).status).toBe(200);
  });

  it('refuses every other route without a token (401)', async () => {
    for (const attack of writes({})) {
      await expectRefused(attack, 401, 'unauthorized');
    }
    const stream = await connectSse(`${manager.origin}/api/events`, {}, NO_AUTH);
    expect(stream.status).toBe(401);
    stream.close();
  });

  it('does not let a differently spelt /API prefix past the credential and scope checks', async () => {
    for (const [method, path] of [
      ['GET', '/API/requirements'],
      ['GET', '/Api/configuration'],
      ['PATCH', '/API/configuration'],
      ['POST', '/API/github/webhook'],
    ]) {
      const res = await sendUntyped(manager.origin, method, path, method === 'GET' ? undefined : {}, {}, NO_AUTH);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
  });

  it('refuses a wrong token (401)', async () => {
    const wrong = manager.token.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'));
    for (const attack of writes({ Authorization: `Bearer ${wrong}` })) {
      await expectRefused(attack, 401);
    }
  });

  it('refuses the token in the query string of an API call, even a valid one (401)', async () => {
    await expectRefused(
      () => sendUntyped(manager.origin, 'GET', `/api/requirements?token=${manager.token}`, undefined, {}, NO_AUTH),
      401,
      'token_in_query',
    );
    await expectRefused(
      () =>
        sendUntyped(
          manager.origin,
          'POST',
          `/api/requirements?access_token=${manager.token}`,
          { provider: 'codex', title: 'x' },
          {},
          NO_AUTH,
        ),
      401,
      'token_in_query',
    );
  });

  it.each([
    ['Basic auth', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['a bare Bearer', 'Bearer'],
    ['two tokens', 'Bearer a b'],
    ['control characters', 'Bearer abc\tdef'],
    ['an oversized token', `Bearer ${'a'.repeat(5000)}`],
    ['a lowercase scheme with junk', 'bearer ../../etc/passwd'],
  ])('refuses a malformed Authorization header: %s (401)', async (_name, header) => {
    await expectRefused(
      () =>
        sendUntyped(
          manager.origin,
          'POST',
          '/api/requirements',
          { provider: 'codex', title: 'x' },
          { Authorization: header },
          NO_AUTH,
        ),
      401,
    );
  });

  it('refuses a foreign Host header (DNS rebinding) even with a valid token (403)', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${port}`,
      `127.0.0.1.evil.example:${port}`,
      `localhost.:${port}`,
      `[::2]:${port}`,
    ]) {
      const body = JSON.stringify({ provider: 'codex', title: 'x' });
      await expectRefused(
        () =>
          sendRaw(manager.origin, 'POST', '/api/requirements', body, {
            'Content-Type': 'application/json',
            Host: host,
          }),
        403,
        'host_not_allowed',
      );
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await sendRaw(manager.origin, 'GET', '/api/requirements', undefined, { Host: host })).status).toBe(200);
    }
  });

  it('refuses a cross-origin state change with a foreign Origin even with a valid token (403)', async () => {
    for (const origin of [
      'https://evil.example',
      'null',
      `http://localhost:${port}.evil.example`,
      'http://localhost:4201',
    ]) {
      await expectRefused(
        () =>
          sendUntyped(
            manager.origin,
            'POST',
            `/api/requirements/${requirementId}/reply`,
            { message: 'x' },
            { Origin: origin },
          ),
        403,
        'origin_not_allowed',
      );
      await expectRefused(
        () => sendUntyped(manager.origin, 'PATCH', '/api/configuration', { logLevel: 'debug' }, { Origin: origin }),
        403,
      );
    }
    const same = await sendUntyped(
      manager.origin,
      'POST',
      `/api/requirements/${requirementId}/reply`,
      { message: 'same origin' },
      { Origin: manager.origin },
    );
    expect(same.status).toBe(202);
    const configured = await sendUntyped(
      manager.origin,
      'POST',
      `/api/requirements/${requirementId}/reply`,
      { message: 'allowed origin' },
      { Origin: 'http://localhost:4200' },
    );
    expect(configured.status).toBe(202);
  });

  it('answers CORS only for the configured origin', async () => {
    const preflight = await sendUntyped(
      manager.origin,
      'OPTIONS',
      '/api/requirements',
      undefined,
      {
        'Access-Control-Request-Method': 'POST',
        Origin: 'http://localhost:4200',
      },
      NO_AUTH,
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:4200');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Authorization');
    const foreign = await sendUntyped(
      manager.origin,
      'OPTIONS',
      '/api/requirements',
      undefined,
      { 'Access-Control-Request-Method': 'POST', Origin: 'https://evil.example' },
      NO_AUTH,
    );
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    const read = await sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, {
      Origin: 'https://evil.example',
    });
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses path traversal and control characters in X-File-Name and IDs', async () => {
    const upload = (name: string) =>
      sendUntyped(manager.origin, 'POST', `/api/requirements/${requirementId}/attachments`, 'data', {
        'Content-Type': 'text/plain',
        'X-File-Name': name,
      });
    await expectRefused(() => upload('../../../.ssh/authorized_keys'), 400, 'invalid_file_name');
    await expectRefused(() => upload(encodeURIComponent('..\\..\\x')), 400, 'invalid_file_name');
    await expectRefused(() => upload(encodeURIComponent('a\r\nb')), 400, 'invalid_file_name');
    await expectRefused(() => upload('%00'), 400, 'invalid_file_name');
    await expectRefused(() => sendUntyped(manager.origin, 'GET', '/api/attachments/..%2F..%2Ftoken'), 404);
    await expectRefused(() => sendUntyped(manager.origin, 'GET', '/api/requirements/req_%0d%0aSet-Cookie:x'), 404);
    await expectRefused(
      () => sendUntyped(manager.origin, 'POST', '/api/requirements/..%2Frequirements/reply', { message: 'x' }),
      404,
    );
  });

  it('sends hardening headers on API and dashboard responses', async () => {
    const api = await manager.api.GET('/api/requirements');
    expect(api.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
    expect(api.headers.get('x-frame-options')).toBe('DENY');
    const page = await sendUntyped(manager.origin, 'GET', '/', undefined, {}, NO_AUTH);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-eval');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('trades the login link for an HttpOnly SameSite=Strict cookie that works for the API, SSE and downloads', async () => {
    const bad = await sendUntyped(manager.origin, 'GET', '/?token=nope', undefined, {}, NO_AUTH);
    expect(bad.status).toBe(401);
    expect(bad.headers.get('set-cookie')).toBeNull();

    const login = await sendUntyped(manager.origin, 'GET', `/?token=${manager.token}&tab=prs`, undefined, {}, NO_AUTH);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/?tab=prs');
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`^am_session_${port}=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict$`));
    expect(setCookie).not.toContain(manager.token);
    const cookie = setCookie.split(';')[0];

    expect((await sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, { Cookie: cookie })).status).toBe(
      200,
    );
    const stream = await connectSse(`${manager.origin}/api/events`, { Cookie: cookie });
    expect(stream.status).toBe(200);
    const reply = await sendUntyped(
      manager.origin,
      'POST',
      `/api/requirements/${requirementId}/reply`,
      { message: 'via cookie' },
      { Cookie: cookie, Origin: manager.origin },
    );
    expect(reply.status).toBe(202);
    const [event] = await stream.waitFor(1);
    expect(event.data).toMatchObject({ actor: { kind: 'human' }, type: 'message.created' });
    stream.close();

    const attachment = (
      await sendUntyped(manager.origin, 'POST', `/api/requirements/${requirementId}/attachments`, 'hello', {
        Cookie: cookie,
        'X-File-Name': 'a.txt',
      })
    ).json;
    const download = await sendUntyped(manager.origin, 'GET', `/api/attachments/${attachment.id}`, undefined, {
      Cookie: cookie,
    });
    expect(download.status).toBe(200);
    expect(download.text).toBe('hello');

    // A forged cookie, or the cookie of another port, is no credential.
    await expectRefused(
      () =>
        sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, {
          Cookie: `am_session_${port}=${'0'.repeat(64)}`,
        }),
      401,
    );
    await expectRefused(
      () =>
        sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, {
          Cookie: cookie.replace(`am_session_${port}`, 'am_session_1'),
        }),
      401,
    );
    // Even if a browser ignored SameSite, a cross-site request carries a foreign Origin.
    await expectRefused(
      () =>
        sendUntyped(
          manager.origin,
          'POST',
          `/api/requirements/${requirementId}/reply`,
          { message: 'csrf' },
          { Cookie: cookie, Origin: 'https://evil.example' },
        ),
      403,
    );
  });

  it('prints the token and login URL with `agent-manager token`', async () => {
    const result = await runLauncher(sandbox, ['token', '--workspace', sandbox.workspace]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${manager.token}\nLogin URL: ${manager.origin}/?token=${manager.token}\n`);
  });
});

describe('authentication: none', () => {
  it('has to be chosen explicitly, and warns in the banner and the log on every start', async () => {
    const sandbox = makeSandbox();
    const manager = await startManager({ env: { CODE_FACTORY_AUTHENTICATION: 'none' }, sandbox });
    try {
      expect(manager.stdout()).toContain('WARNING: authentication is disabled');
      expect(manager.stdout()).not.toContain('?token=');
      expect((await sendUntyped(manager.origin, 'GET', '/api/requirements', undefined, {}, NO_AUTH)).status).toBe(200);
      // The browser defences stay on.
      expect(
        (
          await sendUntyped(
            manager.origin,
            'POST',
            '/api/requirements',
            { provider: 'codex', title: 'x' },
            { Origin: 'https://evil.example' },
            NO_AUTH,
          )
        ).status,
      ).toBe(403);
      expect(
        (await sendRaw(manager.origin, 'GET', '/api/requirements', undefined, { Host: 'evil.example' }, NO_AUTH))
          .status,
      ).toBe(403);
    } finally {
      await manager.stop();
    }
    const logs = path.join(manager.dataDirectory(), 'logs');
    const text = fs
      .readdirSync(logs)
      .filter((f) => f.endsWith('.log'))
      .map((f) => fs.readFileSync(path.join(logs, f), 'utf8'))
      .join('');
    expect(text).toContain('authentication is disabled');
    sandbox.cleanup();
  });
});
