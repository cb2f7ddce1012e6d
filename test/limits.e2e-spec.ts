import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';

import { signWebhookBody } from '@server/github/webhook-signature';

import { apiClient, ok } from './support/api';
import { sendUntyped } from './support/http';
import { openFds, residentMb, sampleMax } from './support/proc';
import { expectRefused } from './support/refusals';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { until } from './support/wait';

/**
 * Limits a local process must not be able to break (issue 12 §5), against the real built
 * server. Loads are bounded in count and time, and the bounds are generous (seconds, not
 * milliseconds) so that they hold on a busy two-core machine while still telling a server that
 * copes from one that stalls (each of these used to take 10 s or more, or never answered).
 */

const NO_AUTH = { auth: false };
const MB = 1024 * 1024;

interface Answer {
  status: number;
  text: string;
  ms: number;
  /** Writing the body failed (after or without an answer). */
  writeError?: string;
}

/** One request on its own connection; `body` is written chunk by chunk, honouring backpressure. */
function request(
  origin: string,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string | number>,
  body?: { chunk: Buffer; count: number; pauseMs?: number },
): Promise<Answer> {
  const url = new URL(origin);
  const started = Date.now();
  return new Promise((resolve) => {
    let writeError: string | undefined;
    let answer: { status: number; text: string } | undefined;
    let responded = false;
    const finish = () =>
      resolve({ ms: Date.now() - started, status: answer?.status ?? 0, text: answer?.text ?? '', writeError });
    const req = http.request({ agent: false, headers, host: url.hostname, method, path: pathAndQuery, port: url.port });
    req.on('response', (res) => {
      responded = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        answer = { status: res.statusCode ?? 0, text };
        finish();
      });
      res.on('error', finish);
      res.on('close', finish);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      writeError = err.code ?? err.message;
      if (!responded) {
        finish();
      }
    });
    void (async () => {
      for (let i = 0; body && i < body.count && !writeError && !req.destroyed; i++) {
        if (!req.write(body.chunk)) {
          await new Promise<void>((resolve) => {
            const go = () => {
              req.off('drain', go).off('close', go);
              resolve();
            };
            req.on('drain', go).on('close', go);
          });
        }
        if (body.pauseMs) {
          await new Promise((r) => setTimeout(r, body.pauseMs));
        }
      }
      req.end();
    })();
  });
}

async function latency(call: () => Promise<{ status: number }>): Promise<number> {
  const started = Date.now();
  expect((await call()).status).toBe(200);
  return Date.now() - started;
}

describe('Limits a local process must not be able to break', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let pid: number;
  let requirementId: string;
  const health = () => apiClient(manager.origin, { auth: false }).GET('/api/health');
  const listRequirements = () => manager.api.GET('/api/requirements', { params: { query: { limit: 5 } } });

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({ sandbox });
    pid = manager.child.pid as number;
    requirementId = (await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'limits' } })))
      .id;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('keeps answering while 2,000 sockets drip header bytes, and closes them after the 15 s header timeout', async () => {
    const port = Number(new URL(manager.origin).port);
    const fdsBefore = openFds(pid);
    const drippers: Array<{ socket: net.Socket; openedAt: number; closedAt?: number; data: string }> = [];
    // Connect in batches: a burst of 2,000 SYNs would overflow the listen backlog on its own.
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(
        Array.from({ length: 200 }, () => {
          const d = {
            data: '',
            openedAt: Date.now(),
            socket: net.connect(port, '127.0.0.1'),
          } as (typeof drippers)[number];
          drippers.push(d);
          d.socket.on('data', (c) => (d.data += c.toString('latin1')));
          d.socket.on('error', () => undefined);
          d.socket.on('close', () => (d.closedAt = Date.now()));
          return new Promise<void>((resolve) =>
            d.socket.once('connect', () => {
              d.socket.write(`POST /api/requirements HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Drip: `);
              resolve();
            }),
          );
        }),
      );
    }
    const drip = setInterval(() => drippers.forEach((d) => d.socket.writable && d.socket.write('a')), 1_000);
    try {
      await until('the server to accept the drippers', async () => openFds(pid) > fdsBefore + 1_900, 5_000, 100);
      const healthMs: number[] = [];
      const listMs: number[] = [];
      for (let i = 0; i < 5; i++) {
        healthMs.push(await latency(health));
        listMs.push(await latency(listRequirements));
      }

      console.log(
        `with 2,000 drippers open: /api/health ${healthMs.join(', ')} ms; GET /api/requirements ${listMs.join(', ')} ms; server fds ${openFds(pid)} (before ${fdsBefore})`,
      );
      expect(Math.max(...healthMs, ...listMs)).toBeLessThan(2_000);

      // The lifetimes below say which were not closed in time (Infinity): no throw here.
      await until(
        'the server to close every dripper',
        async () => drippers.every((d) => d.closedAt !== undefined),
        30_000,
        250,
      ).catch(() => undefined);
    } finally {
      clearInterval(drip);
      drippers.forEach((d) => d.socket.destroy());
    }
    const lifetimes = drippers.map((d) => (d.closedAt ?? Infinity) - d.openedAt);

    console.log(`drippers closed by the server after ${Math.min(...lifetimes)}–${Math.max(...lifetimes)} ms`);
    expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(14_000);
    expect(Math.max(...lifetimes)).toBeLessThan(25_000);
    expect(drippers.filter((d) => !d.data.startsWith('HTTP/1.1 408 '))).toHaveLength(0);
    expect(openFds(pid)).toBeLessThan(fdsBefore + 50);
    expect((await health()).status).toBe(200);
  }, 90_000);

  it('refuses a 90,000-key body (400 too_many_keys) at once, and stays responsive meanwhile', async () => {
    const wide = Buffer.from(
      JSON.stringify({
        provider: 'codex',
        title: 'wide',
        ...Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [i.toString(36), 0])),
      }),
    );
    expect(wide.length).toBeLessThan(MB);
    const probes: number[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        probes.push(await latency(health));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        request(
          manager.origin,
          'POST',
          '/api/requirements',
          {
            Authorization: `Bearer ${manager.token}`,
            'Content-Length': wide.length,
            'Content-Type': 'application/json',
          },
          { chunk: wide, count: 1 },
        ),
      ),
    );
    probing = false;
    await prober;

    console.log(
      `90,000-key bodies answered in ${answers.map((a) => a.ms).join(', ')} ms; /api/health meanwhile at most ${Math.max(...probes)} ms over ${probes.length} probes`,
    );
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ code: 'too_many_keys', statusCode: 400 });
      expect(answer.ms).toBeLessThan(3_000);
    }
    expect(Math.max(...probes)).toBeLessThan(1_500);
  });

  it('webhook: 60 concurrent 24 MB bodies with a bad signature are refused, and the memory they may hold is bounded and given back', async () => {
    const secret = 'limits-webhook-secret';
    expect((await manager.api.PATCH('/api/configuration', { body: { githubWebhookSecret: secret } })).status).toBe(200);
    const ping = JSON.stringify({ zen: 'Design for failure.' });
    // A webhook delivery is signed over its exact bytes: sent untyped on purpose.
    const signed = {
      'Content-Type': 'application/json',
      'X-GitHub-Event': 'ping',
      'X-Hub-Signature-256': signWebhookBody(secret, ping),
    };
    expect((await sendUntyped(manager.origin, 'POST', '/api/github/webhook', ping, signed, NO_AUTH)).status).toBe(202);

    // No signature header at all: refused before a byte of the body is read.
    const unsigned = await request(
      manager.origin,
      'POST',
      '/api/github/webhook',
      { 'Content-Type': 'application/json', 'X-GitHub-Event': 'issue_comment' },
      { chunk: Buffer.alloc(MB, 0x20), count: 24 },
    );
    expect(unsigned.status).toBe(401);

    const chunk = Buffer.alloc(MB, 0x20);
    const headers = {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      'X-GitHub-Event': 'issue_comment',
      'X-Hub-Signature-256': `sha256=${'0'.repeat(64)}`,
    };
    const attack = async () => {
      const peak = sampleMax(() => residentMb(pid));
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 60 }, () =>
          request(manager.origin, 'POST', '/api/github/webhook', headers, { chunk, count: 24 }),
        ),
      );
      const statuses = answers.reduce<Record<number, number>>(
        (acc, a) => ({ ...acc, [a.status]: (acc[a.status] ?? 0) + 1 }),
        {},
      );
      return { ms: Date.now() - started, peak: peak.stop(), statuses };
    };
    const settled = async () => {
      // Freed buffers go back at V8's next collection, which nothing outside the process can
      // trigger or observe: five seconds of light requests is part of what is measured (memory
      // returns on its own while the manager serves), not a guess at how fast something is.
      for (const end = Date.now() + 5_000; Date.now() < end;) {
        await health();
        await new Promise((r) => setTimeout(r, 250));
      }
      return residentMb(pid);
    };
    const before = residentMb(pid);
    const rounds: { ms: number; peak: number; statuses: Record<number, number>; after: number }[] = [];
    for (let round = 0; round < 3; round++) {
      rounds.push({ ...(await attack()), after: await settled() });
    }

    console.log(
      `webhook attack (60 × 24 MB, bad signature), 3 rounds: ${rounds.map((r) => `${JSON.stringify(r.statuses)} in ${r.ms} ms`).join(', ')}; ` +
        `server RSS before ${before.toFixed(0)} MB, peaks ${rounds.map((r) => r.peak.toFixed(0)).join(' / ')} MB, after ${rounds.map((r) => r.after.toFixed(0)).join(' / ')} MB`,
    );
    for (const { statuses } of rounds) {
      // 401 for those read to the end (at most 8 at a time), 429 for the others.
      expect(Object.keys(statuses).sort()).toEqual(['401', '429']);
    }
    // At most 8 deliveries are read at once and at most 1 MB of each is held (the rest are
    // refused and discarded unread): what grows is socket buffers, not bodies (the 1.4 GB sent
    // used to grow the process by 800 MB). Node.js 24 holds more than 20 did (122 MB peak,
    // 107 MB after, seen): the bounds say "no 800 MB".
    const peak = Math.max(...rounds.map((r) => r.peak));
    expect(peak - before).toBeLessThan(160);
    // And nothing stays (what is resident after a round is under its peak, bounded above). What one round adds after another may be allocator slack (RSS, not the
    // heap: freed pages come back when the allocator decides; 61 MB after the second of two
    // rounds was seen on a loaded CI machine, the first having added nothing). Slack does not
    // add up: it is reused by the next round. A leak of even the one MB held per delivery adds
    // 60 MB every round, so it shows in both steps of three rounds; slack shows in one at most.
    const steps = [rounds[1].after - rounds[0].after, rounds[2].after - rounds[1].after];
    expect(Math.min(...steps)).toBeLessThan(45);
    // And it still takes real deliveries, a large one too (then every tracked PR is looked at).
    expect((await sendUntyped(manager.origin, 'POST', '/api/github/webhook', ping, signed, NO_AUTH)).status).toBe(202);
    const large = JSON.stringify({
      comment: { body: 'x'.repeat(2 * MB) },
      issue: { number: 1, pull_request: {} },
      repository: { full_name: 'o/r' },
    });
    const delivered = await sendUntyped(
      manager.origin,
      'POST',
      '/api/github/webhook',
      large,
      { ...signed, 'X-GitHub-Event': 'issue_comment', 'X-Hub-Signature-256': signWebhookBody(secret, large) },
      NO_AUTH,
    );
    expect({ json: delivered.json, status: delivered.status }).toEqual({
      json: { accepted: true, event: 'issue_comment', pullRequests: 0 },
      status: 202,
    });
    expect((await manager.api.PATCH('/api/configuration', { body: { githubWebhookSecret: null } })).status).toBe(200);
  }, 120_000);

  it('answers a miscased or trailing-slash upload route (404) without leaking a file descriptor or a temp file', async () => {
    const attachments = path.join(manager.dataDirectory(), 'attachments');
    await health();
    const fdsBefore = openFds(pid);
    const auth = {
      Authorization: `Bearer ${manager.token}`,
      'Content-Type': 'application/json',
      'X-File-Name': 'a.json',
    };
    const body = { chunk: Buffer.from('{"hello":"world"}'), count: 1 };
    const routes = [
      `/api/requirements/${requirementId}/Attachments`,
      `/api/requirements/${requirementId}/attachments/`,
      `/api/Requirements/${requirementId}/attachments`,
      `/API/requirements/${requirementId}/attachments`,
    ];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => request(manager.origin, 'POST', routes[i % routes.length], auth, body)),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 404));
    expect(answers.map((a) => JSON.parse(a.text).code)).toEqual(answers.map(() => 'not_found'));
    // Each refused upload closes its socket and whatever it opened as the response ends; wait
    // for that state (a leak never gets there), then check it.
    const leftovers = () => fs.readdirSync(attachments).filter((name) => name.startsWith('.upload-'));
    await until(
      'the refused uploads to release their descriptors',
      async () => openFds(pid) <= fdsBefore + 3 && leftovers().length === 0,
      5_000,
    ).catch(() => undefined);
    expect(openFds(pid)).toBeLessThanOrEqual(fdsBefore + 3);
    expect(fs.readdirSync(attachments).filter((name) => name.startsWith('.upload-'))).toEqual([]);
    // The one spelling still takes a JSON file as bytes.
    const stored = await request(manager.origin, 'POST', `/api/requirements/${requirementId}/attachments`, auth, body);
    expect(stored.status).toBe(201);
  });

  it('refuses a lone surrogate or a NUL in any text field or query (400 invalid_text, nothing stored); what is stored is what is answered', async () => {
    // Hand-written JSON and queries with NULs and lone surrogates: untyped on purpose.
    const raw = (p: string, json: string) =>
      sendUntyped(manager.origin, 'POST', p, json, { 'Content-Type': 'application/json' });
    await expectRefused(
      manager.dataDirectory(),
      () => raw('/api/requirements', '{"provider":"codex","title":"lone \\ud800 high"}'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => raw('/api/requirements', '{"provider":"codex","title":"t","description":"lone \\udc00 low"}'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => raw(`/api/requirements/${requirementId}/reply`, '{"message":"\\ud83d"}'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () =>
        raw(
          `/api/requirements/${requirementId}/timers`,
          '{"description":"\\udfff","intervalSeconds":60,"schedule":"once"}',
        ),
      400,
      'invalid_text',
    );
    // NUL: PostgreSQL text cannot hold it, so neither store takes it, in a body or a query filter.
    await expectRefused(
      manager.dataDirectory(),
      () => raw('/api/requirements', '{"provider":"codex","title":"nul \\u0000 inside"}'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => raw(`/api/requirements/${requirementId}/reply`, '{"message":"\\u0000"}'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => sendUntyped(manager.origin, 'GET', '/api/review-requests?pullRequestId=a%00b'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => sendUntyped(manager.origin, 'GET', '/api/requirements?q=%00'),
      400,
      'invalid_text',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => sendUntyped(manager.origin, 'GET', '/api/requirements/%00/changes'),
      404,
      'not_found',
    );

    const created = await raw(
      '/api/requirements',
      '{"provider":"codex","title":"pair \\ud83d\\ude00 and é","description":"\\u2028 line"}',
    );
    expect(created.status).toBe(201);
    expect(created.json.title).toBe('pair 😀 and é');
    const stored = await manager.api.GET('/api/requirements/{id}', { params: { path: { id: created.json.id } } });
    expect({ description: stored.data!.description, title: stored.data!.title }).toEqual({
      description: created.json.description,
      title: created.json.title,
    });
  });

  it('trades every login link for the cookie and strips the token: repeated, on deep links, with other parameters', async () => {
    const port = new URL(manager.origin).port;
    const t = manager.token;
    for (const [link, location] of [
      [`/?token=${t}&token=${t}`, '/'],
      [`/?token=wrong&token=${t}`, '/'],
      [`/requirements/${requirementId}?token=${t}`, `/requirements/${requirementId}`],
      [
        `/requirements/${requirementId}?tab=messages&token=${t}&token=${t}`,
        `/requirements/${requirementId}?tab=messages`,
      ],
      [`//evil.example/x?token=${t}`, '/evil.example/x'],
    ]) {
      // Dashboard links, not API routes: untyped.
      const res = await sendUntyped(manager.origin, 'GET', link, undefined, {}, NO_AUTH);
      expect({ link, location: res.headers.get('location'), status: res.status }).toEqual({
        link,
        location,
        status: 303,
      });
      expect(res.headers.get('set-cookie')).toMatch(
        new RegExp(`^am_session_${port}=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict$`),
      );
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const bad = await sendUntyped(
      manager.origin,
      'GET',
      `/requirements/${requirementId}?token=nope&token=nope2`,
      undefined,
      {},
      NO_AUTH,
    );
    expect(bad.status).toBe(401);
    expect(bad.headers.get('set-cookie')).toBeNull();
  });

  it('lingering close: big bodies with a wrong token, sent fast by many clients or slowly by one, still read their 401', async () => {
    const wrong = {
      Authorization: 'Bearer wrong',
      'Content-Type': 'application/octet-stream',
      'X-File-Name': 'big.bin',
    };
    const chunk = Buffer.alloc(660 * 1024, 0x61);
    const route = `/api/requirements/${requirementId}/attachments`;
    const many = await Promise.all(
      Array.from({ length: 30 }, () =>
        request(manager.origin, 'POST', route, { ...wrong, 'Content-Length': chunk.length * 10 }, { chunk, count: 10 }),
      ),
    );
    const slow = await request(
      manager.origin,
      'POST',
      route,
      { ...wrong, 'Content-Length': chunk.length * 10 },
      { chunk, count: 10, pauseMs: 200 },
    );
    for (const answer of [...many, slow]) {
      expect({ status: answer.status, writeError: answer.writeError }).toEqual({ status: 401, writeError: undefined });
      expect(JSON.parse(answer.text)).toMatchObject({ code: 'unauthorized', statusCode: 401 });
    }
  });
});
