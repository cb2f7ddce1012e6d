import * as fs from 'node:fs';
import * as path from 'node:path';

import { apiClient } from './support/api';
import { onPostgres, query } from './support/db-snapshot';
import { checkConsistency } from './support/fuzz-db';
import { FuzzRequest, FuzzResponse, sendFuzz } from './support/fuzz-http';
import { IdPools, generateRequests, harvestIds, loadOperations, resolveRequest } from './support/fuzz-requests';
import { initRepository } from './support/git-repo';
import { sendUntyped } from './support/http';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

/**
 * Property-based HTTP fuzzing of the real built server: thousands of requests generated from
 * the OpenAPI document (every path × method), with wrong types, missing and extra fields, huge
 * strings, unicode, bad IDs, bad headers and malformed HTTP. Properties: never a 5xx, every 4xx
 * in the JSON error shape, the process alive and quiet on stderr, the store consistent after.
 * Reproduce a run with FUZZ_SEED=<seed printed in the summary>.
 */

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const PER_OPERATION = Number(process.env.FUZZ_PER_OPERATION ?? 160);
const CONCURRENCY = 16;
const REQUEST_TIMEOUT_MS = 15_000;
const MIN_REQUESTS = 5_000;

interface Outcome {
  request: FuzzRequest;
  response: FuzzResponse;
}

function describeRequest(r: FuzzRequest): string {
  const headers = Object.fromEntries(
    Object.entries(r.headers).map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 200)}…(${v.length} chars)` : v]),
  );
  const body = r.body
    ? r.body.length > 400
      ? `${r.body.subarray(0, 400).toString('utf8')}…(${r.body.length} bytes)`
      : r.body.toString('utf8')
    : '(none)';
  const p = r.path.length > 300 ? `${r.path.slice(0, 300)}…(${r.path.length} chars)` : r.path;
  return `${r.method} ${p}\n    endpoint: ${r.endpoint}\n    tags: ${r.tags.join(', ')}\n    headers: ${JSON.stringify(headers)}\n    body: ${JSON.stringify(body)}`;
}

function describeResponse(res: FuzzResponse): string {
  return `${res.status}${res.error ? ` (${res.error})` : ''} ${res.contentType} ${res.text.slice(0, 500)}`;
}

/** The 4xx body contract: `{statusCode, error, message, code}` with the status repeated. */
function errorShapeProblem(o: Outcome): string | null {
  const { request, response } = o;
  if (response.status < 400 || response.status >= 500 || request.lowLevel || request.method === 'HEAD') {
    return null;
  }
  let json: unknown;
  try {
    json = JSON.parse(response.text);
  } catch {
    return `not JSON (${response.contentType})`;
  }
  const body = json as { statusCode?: unknown; message?: unknown; code?: unknown; error?: unknown };
  if (typeof body !== 'object' || body === null) {
    return 'body is not an object';
  }
  if (body.statusCode !== response.status) {
    return `statusCode ${JSON.stringify(body.statusCode)} ≠ ${response.status}`;
  }
  if (typeof body.message !== 'string' || typeof body.code !== 'string' || typeof body.error !== 'string') {
    return 'message, code or error is not a string';
  }
  return null;
}

async function runPool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

function readLogErrors(dataDirectory: string): string[] {
  const dir = path.join(dataDirectory, 'logs');
  const out: string[] = [];
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!name.endsWith('.log')) {
      continue;
    }
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (/"level":"error"/.test(line)) {
        out.push(line);
      }
    }
  }
  return out;
}

describe('HTTP fuzzing: generated requests against every endpoint', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let monitor: SseConnection | undefined;
  let exited: string | null = null;
  const pools: IdPools = { attachment: [], message: [], requirement: [], run: [], session: [], timer: [] };

  beforeAll(async () => {
    sandbox = makeSandbox();
    // A git workspace: started Requirements get worktrees, so changes and diff reach git.
    initRepository(sandbox.workspace, { 'README.md': '# fuzzed\n', 'src/app.ts': 'export const a = 1;\n' });
    manager = await startManager({ sandbox });
    manager.child.once('exit', (code, signal) => (exited = `exit code ${code}, signal ${signal}`));
    // Generated requests, valid or not: untyped on purpose.
    const api = (method: string, p: string, body?: unknown) => sendUntyped(manager.origin, method, p, body as object);
    const create = async (title: string, provider = 'codex') => {
      const res = await api('POST', '/api/requirements', {
        description: `seeded for fuzzing: ${title}`,
        provider,
        title,
      });
      expect(res.status).toBe(201);
      pools.requirement.push(res.json.id);
      return res.json.id as string;
    };
    const upload = async (id: string, name: string, bytes: Buffer) => {
      const res = await sendUntyped(manager.origin, 'POST', `/api/requirements/${id}/attachments`, bytes, {
        'X-File-Name': encodeURIComponent(name),
      });
      expect(res.status).toBe(201);
      pools.attachment.push(res.json.id);
      return res.json.id as string;
    };
    // todo, with attachments waiting to be claimed and a timer
    const todo = await create('todo with uploads');
    await upload(todo, 'notes.txt', Buffer.from('hello'));
    await upload(todo, '设计稿.md', Buffer.from('# design'));
    await upload(todo, 'pixel.png', Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex'));
    const timer = await api('POST', `/api/requirements/${todo}/timers`, {
      description: 'seeded timer',
      intervalSeconds: 3600,
      schedule: 'once',
    });
    expect(timer.status).toBe(201);
    pools.timer.push(timer.json.id);
    // doing: started with a message and an attachment (the idle agent holds the run open)
    const doing = await create('doing', 'claude-code');
    const claimed = await upload(doing, 'spec.txt', Buffer.from('claimed by the start message'));
    const started = await api('POST', `/api/requirements/${doing}/start`, { attachmentIds: [claimed], message: 'go' });
    expect(started.status).toBeLessThan(300);
    const recurring = await api('POST', `/api/requirements/${doing}/timers`, {
      description: 'recurring',
      intervalSeconds: 86400,
      schedule: 'recurring',
    });
    pools.timer.push(recurring.json.id);
    await api('POST', `/api/requirements/${doing}/reply`, { message: 'queued behind the active run' });
    // its worktree has a changed file, for the changes and diff endpoints
    const worktree = await until('the doing worktree, checked out', async () => {
      const at = (await api('GET', `/api/requirements/${doing}`)).json.worktree?.path as string | undefined;
      return at !== undefined && fs.existsSync(path.join(at, 'README.md')) ? at : undefined;
    });
    fs.writeFileSync(path.join(worktree, 'changed.txt'), 'changed by the agent\n');
    fs.appendFileSync(path.join(worktree, 'README.md'), 'more\n');
    // stopped: started then interrupted
    const stopped = await create('stopped');
    await api('POST', `/api/requirements/${stopped}/start`, { message: 'start then stop' });
    const interrupted = await api('POST', `/api/requirements/${stopped}/interrupt`, { mode: 'stop' });
    expect(interrupted.status).toBeLessThan(300);
    // cancelled, with a cancelled timer
    const cancelled = await create('cancelled');
    const t2 = await api('POST', `/api/requirements/${cancelled}/timers`, {
      description: 'to cancel',
      intervalSeconds: 600,
      schedule: 'once',
    });
    pools.timer.push(t2.json.id);
    await api('DELETE', `/api/requirements/${cancelled}/timers/${t2.json.id}`);
    expect((await api('DELETE', `/api/requirements/${cancelled}`)).status).toBeLessThan(300);
    // a plain todo with a queued message
    const withMessage = await create('todo with a message');
    await api('POST', `/api/requirements/${withMessage}/reply`, { message: 'a message before start' });
    await upload(withMessage, 'more.bin', Buffer.from([0, 1, 2, 3]));

    for (const id of pools.requirement) {
      const messages = await api('GET', `/api/requirements/${id}/messages`);
      pools.message.push(...(messages.json?.items ?? []).map((m: { id: string }) => m.id));
    }
    pools.run.push(...((await api('GET', '/api/runs')).json.items as Array<{ id: string }>).map((r) => r.id));
    pools.session.push(...((await api('GET', '/api/sessions')).json.items as Array<{ id: string }>).map((s) => s.id));
    expect(pools.run.length).toBeGreaterThan(0);
    expect(pools.message.length).toBeGreaterThan(0);
    monitor = await connectSse(`${manager.origin}/api/events`);
  }, 60_000);

  afterAll(async () => {
    monitor?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('never answers 5xx, keeps the error shape, stays up and leaves a consistent store', async () => {
    const operations = loadOperations();
    const target = { origin: manager.origin, pools, port: new URL(manager.origin).port, token: manager.token };
    const requests = generateRequests(operations, target, PER_OPERATION, SEED);
    const started = Date.now();

    const outcomes: Outcome[] = [];
    await runPool(requests, CONCURRENCY, async (generated) => {
      const request = resolveRequest(generated, pools);
      const response = await sendFuzz(manager.origin, request, REQUEST_TIMEOUT_MS);
      outcomes.push({ request, response });
      if (response.status >= 200 && response.status < 300) {
        harvestIds(response.text, pools);
      }
    });
    const elapsed = (Date.now() - started) / 1000;

    // --- summary
    const byClass: Record<string, number> = {};
    const byEndpoint: Record<string, Record<string, number>> = {};
    const byTag: Record<string, number> = {};
    for (const { request, response } of outcomes) {
      const cls =
        response.status > 0
          ? `${Math.floor(response.status / 100)}xx`
          : response.status === -1
            ? 'client-refused'
            : 'no-answer';
      byClass[cls] = (byClass[cls] ?? 0) + 1;
      const e = (byEndpoint[request.endpoint] ??= {});
      e[cls] = (e[cls] ?? 0) + 1;
      for (const tag of request.tags) {
        byTag[tag] = (byTag[tag] ?? 0) + 1;
      }
    }
    const endpointLines = Object.entries(byEndpoint)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([endpoint, counts]) =>
          `  ${endpoint.padEnd(62)} ${Object.values(counts)
            .reduce((a, b) => a + b, 0)
            .toString()
            .padStart(5)}  ${JSON.stringify(counts)}`,
      );

    console.log(
      [
        `HTTP fuzz: ${outcomes.length} requests in ${elapsed.toFixed(1)} s (seed ${SEED}, ${operations.length} operations, concurrency ${CONCURRENCY})`,
        `by status class: ${JSON.stringify(byClass)}`,
        `by endpoint:`,
        ...endpointLines,
        `corruptions: ${JSON.stringify(Object.fromEntries(Object.entries(byTag).sort(([, a], [, b]) => b - a)))}`,
      ].join('\n'),
    );

    // --- coverage: this wave's endpoints are in the document and were reached, not only refused
    const WAVE_2 = [
      'GET /api/search',
      'GET /api/requirements/{id}/changes',
      'GET /api/requirements/{id}/changes/diff',
      'PATCH /api/requirements/{id}',
      'POST /api/requirements/{id}/fork',
      'POST /api/requirements/{id}/cancel',
      'GET /api/models',
      'POST /api/models/refresh',
      'PUT /api/requirements/{id}/dependencies',
      'GET /api/usage',
      'GET /api/doctor',
    ];
    const RARELY_VALID = new Set([
      'PATCH /api/requirements/{id}',
      'PUT /api/requirements/{id}/dependencies',
      'GET /api/requirements/{id}/changes',
      'GET /api/requirements/{id}/changes/diff',
    ]);
    const coverage = Object.fromEntries(
      WAVE_2.map((label) => [
        label,
        {
          answered: byEndpoint[label]?.['2xx'] ?? 0,
          sent: Object.values(byEndpoint[label] ?? {}).reduce((a, b) => a + b, 0),
        },
      ]),
    );
    for (const [label, { answered, sent }] of Object.entries(coverage)) {
      expect({ label, sent: sent >= PER_OPERATION }).toEqual({ label, sent: true });
      // Most of these answer 2xx to one request in ten or more; an edit, a dependency list or a
      // diff of the one changed file is valid too rarely (one in forty) to require it every run,
      // and so are changes: only a started Requirement has a worktree, and the fuzz's own cancels,
      // deletes and lands remove the seeded ones (2xx to 4 of 160 in one run, 16 in the next, none
      // in a CI run on PostgreSQL). test/worktrees.e2e-spec.ts proves both answers.
      if (PER_OPERATION >= 100 && !RARELY_VALID.has(label)) {
        expect({ label, reached: answered > 0 }).toEqual({ label, reached: true });
      }
    }

    // --- per-request properties
    const failures: string[] = [];
    const report = (what: string, o: Outcome) =>
      failures.push(`${what}\n  request: ${describeRequest(o.request)}\n  response: ${describeResponse(o.response)}`);
    for (const o of outcomes) {
      if (o.response.status === -1) {
        continue; // never sent: node:http refused the header bytes
      }
      if (o.response.status >= 500) {
        report('5xx answer', o);
      } else if (o.response.status === 0 && !o.request.raw) {
        // Node's parser may hang up on a request it cannot parse; anything else must be answered.
        if (!o.request.lowLevel) {
          report('no answer', o);
        }
      } else if (o.request.expectStatus !== undefined && o.response.status !== o.request.expectStatus) {
        report(`expected ${o.request.expectStatus}`, o);
      } else {
        const shape = errorShapeProblem(o);
        if (shape) {
          report(`4xx without the error shape: ${shape}`, o);
        }
      }
    }
    const clientRefused = outcomes.filter((o) => o.response.status === -1).length;

    // --- the process
    const logErrors = readLogErrors(manager.dataDirectory());
    const stderr = manager.stderr();
    const health = await apiClient(manager.origin, { auth: false }).GET('/api/health');
    const processProblems: string[] = [];
    if (exited !== null) {
      processProblems.push(`the server exited: ${exited}`);
    }
    if (health.status !== 200) {
      processProblems.push(`/api/health answered ${health.status}`);
    }
    if (/uncaught|unhandled|RangeError|TypeError|ReferenceError|heap out of memory|ERR_/i.test(stderr)) {
      processProblems.push(`stderr shows an error:\n${stderr.slice(-4000)}`);
    }
    const unhandled = logErrors.filter((l) => /unhandled/i.test(l));
    if (unhandled.length > 0) {
      processProblems.push(
        `the log records unhandled errors:\n${unhandled
          .slice(0, 5)
          .map((l) => l.slice(0, 3000))
          .join('\n')}`,
      );
    }
    // SSE: the monitor saw every event in id order.
    const seen = monitor?.events.map((e) => e.id) ?? [];
    for (let i = 1; i < seen.length; i++) {
      if (!(seen[i] > seen[i - 1])) {
        processProblems.push(`SSE event ids out of order: ${seen[i - 1]} then ${seen[i]}`);
        break;
      }
    }

    // --- the store
    // Files follow their rows: an aborted upload removes its temporary file once the server sees
    // its socket close, a purge its files after its commit. Those two settle; wait for them (for
    // at most 10 s) and no longer. The rows are checked as they are: committed state is always
    // consistent, so a problem there is reported at once.
    const SETTLING = /^(temporary upload files left behind|attachment files without a row): /;
    const storeProblems = await until(
      'the attachment files to follow their rows',
      async () => {
        const problems = await checkConsistency(manager.dataDirectory());
        return problems.some((p) => !SETTLING.test(p)) || problems.length === 0 ? problems : undefined;
      },
      10_000,
      100,
    ).catch(() => checkConsistency(manager.dataDirectory()));

    console.log(
      `client-side refusals (invalid header bytes, not sent): ${clientRefused}; SSE monitor saw ${seen.length} events; log errors: ${logErrors.length}`,
    );
    if (process.env.FUZZ_REPORT) {
      fs.writeFileSync(process.env.FUZZ_REPORT, [...failures, ...processProblems, ...storeProblems].join('\n\n'));
    }
    const all = [
      ...failures.slice(0, 25),
      ...(failures.length > 25 ? [`… and ${failures.length - 25} more`] : []),
      ...processProblems,
      ...storeProblems,
    ];
    if (all.length > 0) {
      throw new Error(
        `${failures.length} request failures, ${processProblems.length} process problems, ${storeProblems.length} store problems (seed ${SEED}):\n\n${all.join('\n\n')}`,
      );
    }
    expect(outcomes.length - clientRefused).toBeGreaterThanOrEqual(MIN_REQUESTS);

    // --- and it still shuts down cleanly, leaving an intact file and no new logged errors
    monitor?.close();
    const errorsBeforeStop = readLogErrors(manager.dataDirectory()).length;
    expect(await manager.stop()).toBe(0);
    if (!onPostgres()) {
      const [integrity] = await query<{ integrity_check: string }>(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        'PRAGMA integrity_check',
      );
      expect(integrity?.integrity_check).toBe('ok');
    }
    expect(readLogErrors(manager.dataDirectory()).slice(errorsBeforeStop)).toEqual([]);
  }, 240_000);
});
