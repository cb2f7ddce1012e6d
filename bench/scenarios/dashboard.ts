import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

import * as sqlite3 from 'sqlite3';
import type { Page } from 'playwright-core';

import { launchBrowser } from '../../test/support/browser';
import { send } from '../../test/support/http';
import { ManagerProcess, ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { Figure, ScenarioResult, percentile, progress, round } from '../harness';

// The dashboard in Chromium over a large workspace: 1,000 Requirements with 200 messages each,
// plus three with 5,000 messages and 2,000 trace entries. The data is written straight into the
// SQLite file while the manager is stopped (through the API it would take many minutes), in the
// shape the migrations define; then the manager starts on it and the page is measured.

const REQUIREMENTS = 1000;
const MESSAGES = 200;
const BIG = 3;
const BIG_MESSAGES = 5000;
const BIG_TRACES = 2000;
const LIVE_MESSAGES = 40;
const BROWSER_DIST = path.join(ROOT, 'dist', 'dashboard', 'browser');

const ids = (prefix: string) => `${prefix}_${randomUUID()}`;

function run(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<void> {
  return new Promise((resolve, reject) => db.run(sql, params, (err) => (err ? reject(err) : resolve())));
}

/** Inserts rows through one prepared statement (inside the caller's transaction). */
async function insertAll(db: sqlite3.Database, sql: string, rows: unknown[][]): Promise<void> {
  const statement = db.prepare(sql);
  for (const row of rows) {
    await new Promise<void>((resolve, reject) =>
      statement.run(row, (err: Error | null) => (err ? reject(err) : resolve())),
    );
  }
  await new Promise<void>((resolve, reject) => statement.finalize((err) => (err ? reject(err) : resolve())));
}

const BODIES = [
  'Looked at the profile: **segment merge** dominates. Next I will split the encode step and measure again.',
  'Please also report the flush durations, and keep the existing log format.',
  'Done:\n\n- added `merge_ms`\n- added `encode_ms`\n- tests updated\n\n```ts\nconst t = performance.now();\n```',
  'The CI failure was a flaky timeout in `compaction.spec.ts`; re-ran it and it passed.',
];

/** Writes the workspace; returns the IDs of the big Requirements (newest first). */
async function seed(databasePath: string): Promise<string[]> {
  const db = new sqlite3.Database(databasePath);
  await run(db, 'PRAGMA journal_mode = WAL');
  await run(db, 'PRAGMA synchronous = OFF');
  await run(db, 'BEGIN');
  const now = Date.now();
  const requirements: unknown[][] = [];
  const sessions: unknown[][] = [];
  const messages: unknown[][] = [];
  const runs: unknown[][] = [];
  const events: unknown[][] = [];
  const statuses = ['todo', 'doing', 'waiting_confirmation', 'done'] as const;
  const states = {
    doing: 'waiting_human',
    done: 'completed',
    todo: 'idle',
    waiting_confirmation: 'waiting_human',
  } as const;
  const big: string[] = [];
  const total = REQUIREMENTS + BIG;
  let parent: string | null = null;
  for (let i = 0; i < total; i++) {
    const isBig = i < BIG;
    const id = ids('req');
    const sessionId = ids('ses');
    // Spread over the last six days (inside the default 7-day window), newest first.
    const created = new Date(now - 60_000 - i * Math.floor((6 * 86_400_000) / total)).toISOString();
    const status = isBig ? 'waiting_confirmation' : statuses[i % 4];
    const count = isBig ? BIG_MESSAGES : MESSAGES;
    // Every tenth Requirement is a child of the one before, so the board draws trees.
    const parentId = i % 10 === 9 ? parent : null;
    parent = id;
    requirements.push([
      id,
      isBig ? `Big conversation ${i + 1}` : `Requirement ${i + 1}: tiered timings for segment ${i}`,
      `Measure **segment ${i}**.`,
      status,
      'codex',
      null,
      null,
      'human',
      parentId,
      null,
      created,
      created,
      status === 'done' ? created : null,
    ]);
    sessions.push([sessionId, id, 'codex', null, states[status], null, count, 0, count, created, created]);
    for (let s = 1; s <= count; s++) {
      const human = s % 2 === 1;
      messages.push([
        ids('msg'),
        id,
        sessionId,
        null,
        null,
        human ? 'human' : 'rd_agent',
        `${BODIES[s % BODIES.length]} (step ${s})`,
        s,
        human ? 1 : 0,
        null,
        null,
        null,
        created,
      ]);
    }
    if (isBig) {
      big.push(id);
      for (let r = 0; r < 10; r++) {
        const runId = ids('run');
        const startedAt = new Date(Date.parse(created) + r * 60_000).toISOString();
        const finishedAt = new Date(Date.parse(startedAt) + 50_000).toISOString();
        runs.push([
          runId,
          id,
          sessionId,
          'rd',
          'codex',
          null,
          null,
          'succeeded',
          'Did part of the work.',
          null,
          0,
          null,
          r * 500 + 1,
          r * 500 + 500,
          12_000,
          0,
          3_000,
          0,
          BIG_TRACES / 10,
          startedAt,
          finishedAt,
          finishedAt,
        ]);
        for (let t = 1; t <= BIG_TRACES / 10; t++) {
          const kind = (['reasoning', 'tool_call', 'tool_result', 'assistant_message'] as const)[t % 4];
          const trace = {
            createdAt: startedAt,
            detail: kind === 'tool_result' ? 'ok\n'.repeat(20) : 'npm test -- compaction',
            id: ids('trc'),
            kind,
            nativeType: null,
            runId,
            sequence: t,
            status: kind === 'tool_call' ? 'started' : kind === 'tool_result' ? 'completed' : null,
            title: kind === 'reasoning' ? 'Thinking about the merge step' : 'npm test -- compaction',
            toolCallId: kind.startsWith('tool') ? `call_${Math.floor(t / 4)}` : null,
            toolName: kind.startsWith('tool') ? 'shell' : null,
          };
          events.push([
            'run.trace.appended',
            id,
            sessionId,
            runId,
            'agent',
            runId,
            JSON.stringify({ trace }),
            startedAt,
          ]);
        }
      }
    }
  }
  await insertAll(
    db,
    'INSERT INTO requirement (id, title, description, status, provider, model, reasoning_effort, created_by, parent_requirement_id, source_session_id, created_at, updated_at, completed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)',
    requirements,
  );
  await insertAll(
    db,
    'INSERT INTO agent_session (id, requirement_id, provider, native_session_id, state, last_error, last_consumed_message_sequence, pending_message_count, last_message_sequence, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)',
    sessions,
  );
  await insertAll(
    db,
    'INSERT INTO requirement_message (id, requirement_id, session_id, run_id, source_requirement_id, author, body, sequence, deliver_to_rd, source, trigger_id, metadata, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)',
    messages,
  );
  await insertAll(
    db,
    'INSERT INTO agent_run (id, requirement_id, session_id, role, provider, model, reasoning_effort, status, task_summary, native_session_id, exit_code, error, input_from_sequence, input_to_sequence, input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens, trace_count, started_at, finished_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)',
    runs,
  );
  await insertAll(
    db,
    'INSERT INTO manager_event (type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at) VALUES (?,?,?,?,?,?,?,?)',
    events,
  );
  await run(db, 'COMMIT');
  await new Promise<void>((resolve, reject) => db.close((err) => (err ? reject(err) : resolve())));
  return big;
}

/**
 * The initial JavaScript, gzip-compressed as a server would send it: what index.html loads
 * (scripts and module preloads) and everything those import statically, preloaded or not.
 */
function initialJsGzipKb(): number {
  const html = fs.readFileSync(path.join(BROWSER_DIST, 'index.html'), 'utf8');
  const files = new Set([...html.matchAll(/(?:src|href)="\/?([^"]+\.js)"/g)].map((m) => m[1]));
  for (const file of files) {
    for (const m of fs
      .readFileSync(path.join(BROWSER_DIST, file), 'utf8')
      .matchAll(/\b(?:from|import)\s*"\.\/([\w.-]+\.js)"/g)) {
      files.add(m[1]);
    }
  }
  let bytes = 0;
  for (const file of files) {
    bytes += zlib.gzipSync(fs.readFileSync(path.join(BROWSER_DIST, file)), { level: 9 }).length;
  }
  return bytes / 1024;
}

/**
 * In-page probes, installed before the app runs: when each `message.created` frame reached the
 * page (our EventSource listener is registered before the app's), and when each message's
 * element entered the DOM.
 */
const PROBES = `(() => {
  const probe = (window.__amProbe = { firstCard: null, events: {}, dom: {}, sequences: {}, clickAt: null });
  // When the person's click reached the page (not when the test runner started to click).
  document.addEventListener('click', (e) => { probe.clickAt = e.timeStamp; }, true);
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(url, init) {
      super(url, init);
      this.addEventListener('message.created', (e) => {
        try { probe.events[JSON.parse(e.data).payload.message.id] = performance.now(); } catch {}
      });
    }
  };
  new MutationObserver((records) => {
    const t = performance.now();
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType !== 1) continue;
      if (probe.firstCard === null && (n.matches('a.card') || n.querySelector('a.card'))) probe.firstCard = t;
      const found = n.matches('[data-message-id]') ? [n] : n.querySelectorAll('[data-message-id]');
      for (const m of found) {
        if (!(m.dataset.messageId in probe.dom)) probe.dom[m.dataset.messageId] = t;
        if (!(m.dataset.sequence in probe.sequences)) probe.sequences[m.dataset.sequence] = t;
      }
    }
  }).observe(document, { childList: true, subtree: true });
})();`;

/** With BENCH_DEBUG: the page's request waterfall (start → first byte → end, ms after navigation start) and its paints. */
async function logWaterfall(page: Page, label: string): Promise<void> {
  if (!process.env['BENCH_DEBUG']) {
    return;
  }
  type Timing = {
    name: string;
    entryType: string;
    startTime: number;
    responseStart: number;
    responseEnd: number;
    redirectEnd?: number;
    transferSize?: number;
  };
  const entries = await page.evaluate(() => {
    const perf = (globalThis as unknown as { performance: { getEntries(): Timing[] } }).performance;
    return perf
      .getEntries()
      .filter((e) => e.entryType === 'navigation' || e.entryType === 'resource' || e.entryType === 'paint')
      .map((e) => ({
        entryType: e.entryType,
        name: e.name,
        redirectEnd: e.redirectEnd,
        responseEnd: e.responseEnd ?? 0,
        responseStart: e.responseStart ?? 0,
        startTime: e.startTime,
        transferSize: e.transferSize,
      }));
  });
  const rows = entries.map((e) =>
    e.entryType === 'paint'
      ? `${e.name} ${Math.round(e.startTime)}`
      : `${e.name.replace(/^https?:\/\/[^/]+/, '').slice(0, 80)} ${Math.round(e.startTime)}→${Math.round(e.responseStart)}→${Math.round(e.responseEnd)}${e.redirectEnd ? ` (redirect until ${Math.round(e.redirectEnd)})` : ''} ${e.transferSize ?? ''}B`,
  );
  progress(`${label}\n${rows.join('\n')}`);
}

interface Probe {
  firstCard: number | null;
  clickAt: number | null;
  /** When each message sequence first appeared in the DOM. */
  sequences: Record<string, number>;
  events: Record<string, number>;
  dom: Record<string, number>;
}

export async function dashboardScenario(): Promise<ScenarioResult> {
  if (!fs.existsSync(path.join(BROWSER_DIST, 'index.html'))) {
    throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
  }
  const sandbox = makeSandbox();
  let manager: ManagerProcess = await startManager({ args: ['--log-level', 'warn'], sandbox });
  const databasePath = path.join(manager.dataDirectory(), 'factory.sqlite');
  await manager.stop();
  progress(
    `dashboard: seeding ${REQUIREMENTS} Requirements × ${MESSAGES} messages and ${BIG} × ${BIG_MESSAGES} messages + ${BIG_TRACES} trace entries`,
  );
  const seedStart = Date.now();
  const big = await seed(databasePath);
  progress(`dashboard: seeded in ${round((Date.now() - seedStart) / 1000, 1)} s`);
  manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
  const browser = await launchBrowser();
  const { page } = browser;
  try {
    await page.addInitScript(PROBES);
    // Page code reaches the DOM through `globalThis`: the bench compiles without the DOM library
    // (and strings would be eval, which the dashboard's CSP forbids).
    const probe = () => page.evaluate(() => (globalThis as unknown as { __amProbe: Probe }).__amProbe);

    // 1. First board: from navigation start to the first card in the DOM, and to the whole board.
    progress('dashboard: first board');
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.locator('a.card').first().waitFor();
    const wholeBoard = () =>
      page.waitForFunction(
        (n) => {
          const doc = (
            globalThis as unknown as {
              document: { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> };
            }
          ).document;
          return (
            Array.from(doc.querySelectorAll('[data-testid="column-count"]')).reduce(
              (sum, el) => sum + Number(el.textContent),
              0,
            ) >= n
          );
        },
        REQUIREMENTS + BIG,
        { timeout: 60_000 },
      );
    await wholeBoard();
    const boardAll = await page.evaluate(() => performance.now());
    const coldFirstCard = (await probe()).firstCard ?? NaN;
    await logWaterfall(page, `first board (cold): first card at ${Math.round(coldFirstCard)} ms`);
    // Again with a warm HTTP cache (the usual case: the dashboard is a tab people reopen).
    await page.reload();
    await page.locator('a.card').first().waitFor();
    const warmFirstCard = (await probe()).firstCard ?? NaN;
    await wholeBoard();

    // 2. Open each big Requirement from the board, as a person does (the app stays loaded): from
    // the click to its latest message in the DOM; older pages keep arriving off-screen, and the
    // time until the whole conversation is in memory is reported too.
    const opens: number[] = [];
    const complete: number[] = [];
    for (const id of big) {
      const card = page.locator(`a.card[data-requirement-id="${id}"]`);
      await card.waitFor();
      await page.evaluate(() => {
        (globalThis as unknown as { __amProbe: Probe }).__amProbe.sequences = {};
      });
      await card.click();
      await page.locator(`[data-testid="messages"] [data-sequence="${BIG_MESSAGES}"]`).waitFor({ timeout: 30_000 });
      const { clickAt, sequences } = await probe();
      const t0 = clickAt ?? NaN;
      opens.push(sequences[String(BIG_MESSAGES)] - t0);
      if (process.env['BENCH_DEBUG']) {
        // The request waterfall of this open (start → first byte → end, ms after the click).
        type Timing = { name: string; startTime: number; responseStart: number; responseEnd: number };
        const timings = await page.evaluate(
          (start) =>
            (globalThis as unknown as { performance: { getEntriesByType(type: string): Timing[] } }).performance
              .getEntriesByType('resource')
              .filter((e) => e.startTime >= start)
              .map((e) => ({
                name: e.name,
                responseEnd: e.responseEnd,
                responseStart: e.responseStart,
                startTime: e.startTime,
              })),
          t0,
        );
        const rows = timings.map(
          (e) =>
            `${e.name.replace(/^.*\/api/, '').slice(0, 90)} ${Math.round(e.startTime - t0)}→${Math.round(e.responseStart - t0)}→${Math.round(e.responseEnd - t0)}`,
        );
        progress(`open ${Math.round(opens[opens.length - 1])} ms\n${rows.slice(0, 12).join('\n')}`);
      }
      // All pages are in once "show earlier" offers the rest of them.
      await page.getByText(`(${BIG_MESSAGES - 30})`).waitFor({ timeout: 30_000 });
      complete.push((await page.evaluate(() => performance.now())) - t0);
      await page.getByRole('link', { name: 'Back to boards' }).click();
    }
    await page.locator(`a.card[data-requirement-id="${big[big.length - 1]}"]`).click();
    await page.getByTestId('tab-trace').click();
    await page.getByTestId('trace').locator('.trace-item').first().waitFor();
    const traceCount = Number(await page.getByTestId('tab-trace').locator('.badge').textContent());

    // 3. Live messages into the open conversation: SSE frame to DOM, per message, with the
    // activity indicator on (the first reply starts a run, which the idle agent keeps active; the
    // indicator's elapsed time ticks while the rest arrive).
    progress(`dashboard: ${LIVE_MESSAGES} live messages`);
    const target = big[big.length - 1];
    await page.getByTestId('tab-overview').click();
    await send(manager.origin, 'POST', `/api/requirements/${target}/reply`, { message: 'Start working on it' });
    await page.getByTestId('activity').waitFor({ timeout: 30_000 });
    const sent: string[] = [];
    for (let i = 0; i < LIVE_MESSAGES; i++) {
      const reply = await send(manager.origin, 'POST', `/api/requirements/${target}/reply`, {
        message: `Live message ${i}`,
      });
      sent.push(reply.json.message.id as string);
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.waitForFunction(
      (last) => !!(globalThis as unknown as { __amProbe: Probe }).__amProbe.dom[last],
      sent[sent.length - 1],
      { timeout: 30_000 },
    );
    const { dom, events } = await probe();
    const latencies = sent.map((id) => (dom[id] ?? NaN) - (events[id] ?? NaN)).sort((a, b) => a - b);
    const missing = latencies.filter((l) => Number.isNaN(l)).length;
    const activityOn = (await page.getByTestId('activity').count()) > 0;

    // 4. A phone opening a Requirement from a link (a notification, a chat): a fresh browser at
    // 390×844, from navigation start (the login redirect included) to its latest message painted.
    progress('dashboard: phone first paint');
    const phonePaints: number[] = [];
    for (let i = 0; i < 3; i++) {
      const phone = await launchBrowser({ viewport: { height: 844, width: 390 } });
      try {
        await phone.page.addInitScript(PROBES);
        await phone.page.goto(`${manager.origin}/requirements/${big[0]}?token=${manager.token}`);
        await phone.page
          .locator(`[data-testid="messages"] [data-sequence="${BIG_MESSAGES}"]`)
          .waitFor({ timeout: 30_000 });
        const { sequences } = await phone.page.evaluate(
          () => (globalThis as unknown as { __amProbe: Probe }).__amProbe,
        );
        phonePaints.push(sequences[String(BIG_MESSAGES)]);
        await logWaterfall(phone.page, `phone first paint ${i + 1}: ${Math.round(sequences[String(BIG_MESSAGES)])} ms`);
      } finally {
        await phone.close();
      }
    }

    const figures: Figure[] = [
      { name: 'initial JS (gzip)', target: { op: '<=', value: 300 }, unit: 'KB', value: round(initialJsGzipKb(), 1) },
      {
        name: 'first board (cold, first card)',
        target: { op: '<=', value: 1000 },
        unit: 'ms',
        value: round(coldFirstCard, 0),
      },
      { name: 'first board (warm cache)', unit: 'ms', value: round(warmFirstCard, 0) },
      { name: `whole board (${REQUIREMENTS + BIG} Requirements)`, unit: 'ms', value: round(boardAll, 0) },
      {
        name: `open ${BIG_MESSAGES}-message conversation (max of ${BIG})`,
        target: { op: '<=', value: 500 },
        unit: 'ms',
        value: round(Math.max(...opens), 0),
      },
      {
        name: `${BIG_MESSAGES} messages all loaded (max of ${BIG})`,
        unit: 'ms',
        value: round(Math.max(...complete), 0),
      },
      { name: 'event-to-DOM p50', unit: 'ms', value: round(percentile(latencies, 50), 1) },
      {
        name: 'event-to-DOM p95 (activity indicator on)',
        target: { op: '<=', value: 100 },
        unit: 'ms',
        value: round(percentile(latencies, 95), 1),
      },
      {
        name: `phone first paint of a ${BIG_MESSAGES}-message Requirement (max of 3, cold)`,
        target: { op: '<=', value: 1000 },
        unit: 'ms',
        value: round(Math.max(...phonePaints), 0),
      },
    ];
    const notes = [
      `opens: ${opens.map((o) => Math.round(o)).join(', ')} ms; all loaded: ${complete.map((o) => Math.round(o)).join(', ')} ms; trace entries on the last: ${traceCount}`,
      missing ? `${missing} live message(s) never reached the DOM` : `${LIVE_MESSAGES} live messages, all rendered`,
      `activity indicator ${activityOn ? 'on' : 'OFF'} during the live messages; phone first paints: ${phonePaints.map((p) => Math.round(p)).join(', ')} ms`,
      `console errors: ${browser.errors.length}`,
    ];
    return { figures, notes, scenario: 'dashboard' };
  } finally {
    await browser.close();
    await manager.stop();
    sandbox.cleanup();
  }
}
