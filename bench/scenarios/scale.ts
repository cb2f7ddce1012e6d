import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';

import * as sqlite3 from 'sqlite3';

import { send } from '../../test/support/http';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../../test/support/manager-process';
import { pgQuery } from '../../test/support/postgres';
import { Figure, ScenarioResult, percentile, progress, round } from '../harness';
import type { Json } from '../../test/support/http';

// Does the cost of the everyday reads grow with the data? The same reads, against the real
// server process, on a large workspace (10,000 Requirements, 1,000,000 messages, 2,000,000
// events) and on a small one (300 Requirements, ~1,000 messages, ~2,000 events), interleaved
// request by request so both see the same background load; each figure is reported beside its
// small-workspace counterpart and their ratio. Both workspaces are written by the same
// generator, in SQL (recursive CTEs, one transaction), while their manager is stopped.

interface Shape {
  requirements: number;
  /** Requirements with `bigMessages` messages each (the conversations paged deep). */
  big: number;
  bigMessages: number;
  /** Messages in all; the others are shared evenly by the remaining Requirements. */
  messages: number;
  /** Events in all: one requirement.created per Requirement, one message.created per message, the rest run.trace.appended. */
  events: number;
}

/** Issue 16: a search answers within this at the 95th percentile on the large workspace. */
const SEARCH_P95_MS = 200;
const FULL_LARGE: Shape = { big: 4, bigMessages: 5000, events: 2_000_000, messages: 1_000_000, requirements: 10_000 };
/**
 * On PostgreSQL the large workspace is seeded on SQLite as above and moved with `db copy`, which
 * at 5M rows would take many minutes: a fifth of the messages and events, the same Requirements
 * and big conversations (the same deep pages), about 0.85M rows to copy.
 */
const POSTGRES_LARGE: Shape = { big: 4, bigMessages: 5000, events: 400_000, messages: 200_000, requirements: 10_000 };
/** BENCH_SCALE_SHAPE=small (while developing): a large workspace still past every deep page, seeded and copied in seconds. */
const REDUCED_LARGE: Shape = { big: 4, bigMessages: 5000, events: 80_000, messages: 38_000, requirements: 6000 };
const SMALL: Shape = { big: 1, bigMessages: 150, events: 2000, messages: 1047, requirements: 300 };
/** The deep Requirements page starts after this item (large / small workspace). */
const DEEP_ITEM = { large: 5000, small: 250 };
/** The late conversation page starts after this sequence. */
const LATE_SEQUENCE = { large: 4900, small: 100 };
/** Replay starts after this event id; the next 200 are requirement.created events in both. */
const REPLAY_AFTER = { large: 1000, small: 1 };

const HTTP_SAMPLES = Number(process.env['BENCH_SCALE_HTTP_SAMPLES'] ?? 400);
const HTTP_WARMUP = 10;
const SSE_SAMPLES = Number(process.env['BENCH_SCALE_SSE_SAMPLES'] ?? 100);
const STARTUP_SAMPLES = Number(process.env['BENCH_SCALE_STARTUP_SAMPLES'] ?? 5);
const TARGET_RATIO = 2;

/** Deterministic IDs in the app's shape (`<prefix>_<uuid>`), increasing with the counter. */
const idSql = (prefix: string, counter: string) => `printf('${prefix}_5ca1e000-0000-4000-8000-%012x', ${counter})`;
const scaleId = (prefix: string, counter: number) =>
  `${prefix}_5ca1e000-0000-4000-8000-${counter.toString(16).padStart(12, '0')}`;
/** An ISO timestamp (as Date.toISOString writes it) from epoch milliseconds. */
const isoSql = (ms: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`;

const BODY_SQL = (k: string) => `CASE ${k} % 4
  WHEN 0 THEN 'Looked at the profile: **segment merge** dominates. Next I will split the encode step and measure again.'
  WHEN 1 THEN 'Please also report the flush durations, and keep the existing log format.'
  WHEN 2 THEN 'Done:' || char(10) || char(10) || '- added \`merge_ms\`' || char(10) || '- added \`encode_ms\`' || char(10) || '- tests updated'
  ELSE 'The CI failure was a flaky timeout in \`compaction.spec.ts\`; re-ran it and it passed.' END || ' (step ' || ${k} || ')'`;

/** The Requirement snapshot every Requirement event carries (toRequirementResponse), as SQL JSON. */
function snapshotSql(
  r: string,
  at: { status: string; state: string; consumed: string; updatedAt: string; completedAt: string },
): string {
  return `json_object(
    'autoReview', NULL, 'baseRef', NULL, 'budget', NULL, 'budgetReachedAt', NULL, 'completedAt', ${at.completedAt}, 'createdAt', ${r}.created, 'createdBy', 'human', 'description', ${r}.description,
    'forkedFromRequirementId', NULL, 'id', ${r}.id, 'isolation', 'in_place',
    'landing', json_object('baseSha', NULL, 'behindBy', NULL, 'checkedAt', NULL, 'conflictPaths', json('[]'), 'conflictsWith', json('[]'), 'headSha', NULL, 'landedAt', NULL,
      'landedCommit', NULL, 'landedMethod', NULL, 'mergesCleanly', NULL), 'model', NULL, 'parentRequirementId', NULL, 'provider', 'codex', 'reasoningEffort', NULL, 'runner', NULL,
    'session', json_object('createdAt', ${r}.created, 'id', ${r}.ses, 'lastConsumedMessageSequence', ${at.consumed}, 'lastError', NULL, 'lastMessageSequence', ${at.consumed},
      'nativeSessionId', NULL, 'pausedAt', NULL, 'pendingMessageCount', 0, 'provider', 'codex', 'requirementId', ${r}.id, 'state', ${at.state}, 'updatedAt', ${at.updatedAt}),
    'sourceSessionId', NULL, 'status', ${at.status}, 'title', ${r}.title, 'treeUsage', json_object('costUsd', NULL, 'inputTokens', 0, 'outputTokens', 0), 'updatedAt', ${at.updatedAt},
    'usage', json_object('costUsd', NULL, 'inputTokens', 0, 'outputTokens', 0), 'worktree', NULL)`;
}

/**
 * A printf format from a JSON expression with placeholder strings: `%` escaped, then each
 * placeholder (with its quotes, as JSON wrote it) replaced by its conversion.
 */
function templateSql(json: string, placeholders: Record<string, string>): string {
  return Object.entries(placeholders).reduce(
    (sql, [from, to]) => `replace(${sql}, '${from}', '${to}')`,
    `replace(${json}, '%', '%%')`,
  );
}

/** The statements that fill a freshly migrated database with `shape`, named for progress lines. */
function seedStatements(shape: Shape, now: number): Array<[string, string]> {
  const { requirements: R, big, bigMessages, messages: M, events: E } = shape;
  const others = R - big;
  const otherMessages = M - big * bigMessages;
  const base = Math.floor(otherMessages / others);
  const extra = otherMessages - base * others;
  const traces = E - R - M;
  const traceBase = Math.floor(traces / R);
  const traceExtra = traces - traceBase * R;
  if (base < 1 || traceBase < 1 || traceBase + 1 > 999) {
    throw new Error(`scale: inconsistent shape ${JSON.stringify(shape)}`);
  }
  const bigIndexes = Array.from({ length: big }, (_, j) => Math.floor(((j + 0.5) * R) / big));
  // Created over the last six days (inside every retention window), oldest first, on whole
  // seconds; messages half a second apart; a run's trace entries a millisecond apart, in the
  // second it started (so their timestamps are a string edit rather than a strftime).
  const t0 = Math.floor(now / 1000) * 1000 - 6 * 86_400_000;
  const step = Math.floor((5.5 * 86_400) / R) * 1000;
  const traceAt = `substr(r.created, 1, 20) || printf('%03dZ', s.k)`;
  const statuses = `CASE WHEN i IN (${bigIndexes.join(',')}) THEN 'waiting_confirmation' ELSE CASE i % 5 WHEN 0 THEN 'doing' WHEN 1 THEN 'waiting_confirmation' ELSE 'done' END END`;
  return [
    [
      'plan',
      `CREATE TEMP TABLE seq (k INTEGER PRIMARY KEY);
       WITH RECURSIVE s(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM s WHERE k < ${Math.max(bigMessages, base + 1, traceBase + 1)}) INSERT INTO seq SELECT k FROM s;
       CREATE TEMP TABLE plan (i INTEGER PRIMARY KEY, id, ses, run, title, description, status, state, cnt, off, tcnt, toff, created_ms, created, updated, completed, mtpl);
       WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${R - 1}),
       c AS (
         SELECT i, ${statuses} AS status,
           CASE WHEN i IN (${bigIndexes.join(',')}) THEN ${bigMessages} WHEN i < ${extra} THEN ${base + 1} ELSE ${base} END AS cnt,
           CASE WHEN i < ${traceExtra} THEN ${traceBase + 1} ELSE ${traceBase} END AS tcnt,
           ${t0} + i * ${step} AS created_ms
         FROM n)
       INSERT INTO plan
       SELECT i, ${idSql('req', 'i')}, ${idSql('ses', 'i')}, ${idSql('run', 'i')},
         CASE WHEN cnt = ${bigMessages} THEN 'Big conversation ' || i ELSE 'Requirement ' || i || ': tiered timings for segment ' || (i % 97) END,
         'Measure **segment ' || (i % 97) || '** and report merge and encode times separately.',
         status, CASE status WHEN 'done' THEN 'completed' ELSE 'waiting_human' END,
         cnt, SUM(cnt) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) - cnt,
         tcnt, SUM(tcnt) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) - tcnt,
         created_ms, ${isoSql('created_ms')}, ${isoSql('created_ms + cnt * 500')},
         CASE status WHEN 'done' THEN ${isoSql('created_ms + cnt * 500')} END, NULL
       FROM c ORDER BY i`,
    ],
    [
      'requirements and sessions',
      `INSERT INTO requirement (id, title, description, status, provider, model, reasoning_effort, created_by, parent_requirement_id, source_session_id, created_at, updated_at, completed_at)
         SELECT id, title, description, status, 'codex', NULL, NULL, 'human', NULL, NULL, created, updated, completed FROM plan ORDER BY i;
       INSERT INTO agent_session (id, requirement_id, provider, native_session_id, state, last_error, last_consumed_message_sequence, pending_message_count, last_message_sequence, created_at, updated_at)
         SELECT ses, id, 'codex', NULL, state, NULL, cnt, 0, cnt, created, updated FROM plan ORDER BY i;
       INSERT INTO agent_run (id, requirement_id, session_id, role, provider, model, reasoning_effort, status, task_summary, native_session_id, exit_code, error, input_from_sequence, input_to_sequence, input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens, trace_count, started_at, finished_at, updated_at)
         SELECT run, id, ses, 'rd', 'codex', NULL, NULL, 'succeeded', 'Split the encode step and measured it.', NULL, 0, NULL, 1, cnt, 12000, 0, 3000, 0, tcnt, created, updated, updated FROM plan ORDER BY i`,
    ],
    [
      'messages',
      `INSERT INTO requirement_message (id, requirement_id, session_id, run_id, source_requirement_id, author, body, sequence, deliver_to_rd, source, trigger_id, metadata, created_at)
         SELECT ${idSql('msg', 'r.off + s.k')}, r.id, r.ses, CASE WHEN s.k % 2 = 0 THEN r.run END, NULL,
           CASE WHEN s.k % 2 = 1 THEN 'human' ELSE 'rd_agent' END, ${BODY_SQL('s.k')}, s.k, s.k % 2, NULL, NULL, NULL, ${isoSql('r.created_ms + s.k * 500')}
         FROM plan r JOIN seq s ON s.k <= r.cnt ORDER BY r.i, s.k`,
    ],
    [
      'requirement.created events',
      `INSERT INTO manager_event (id, type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at)
         SELECT r.i + 1, 'requirement.created', r.id, r.ses, NULL, 'human', NULL,
           json_object('requirement', ${snapshotSql('r', { completedAt: 'NULL', consumed: '0', state: `'idle'`, status: `'todo'`, updatedAt: 'r.created' })}), r.created
         FROM plan r ORDER BY r.i`,
    ],
    [
      // One printf per event, from a per-Requirement template (json_object per row is what
      // would cost here); the message's own fields are read back from the row just written.
      'message.created events',
      `UPDATE plan SET mtpl = ${templateSql(
        `json_object(
           'message', json_object('attachments', json_array(), 'author', '@1', 'body', '@2', 'createdAt', '@3', 'deliverToRd', '@4', 'id', '@5',
             'metadata', NULL, 'requirementId', id, 'runId', '@6', 'sequence', '@7', 'sessionId', ses, 'source', NULL, 'sourceRequirementId', NULL, 'triggerId', NULL),
           'requirement', ${snapshotSql('plan', { completedAt: 'plan.completed', consumed: `'@8'`, state: 'plan.state', status: 'plan.status', updatedAt: `'@9'` })})`,
        {
          '"@1"': '"%s"',
          '"@2"': '%s',
          '"@3"': '"%s"',
          '"@4"': '%s',
          '"@5"': '"%s"',
          '"@6"': '%s',
          '"@7"': '%d',
          '"@8"': '%d',
          '"@9"': '"%s"',
        },
      )};
       INSERT INTO manager_event (id, type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at)
         SELECT ${R} + r.off + m.sequence, 'message.created', r.id, r.ses, m.run_id, CASE m.author WHEN 'human' THEN 'human' ELSE 'agent' END, m.run_id,
           printf(r.mtpl, m.author, json_quote(m.body), m.created_at, CASE m.deliver_to_rd WHEN 1 THEN 'true' ELSE 'false' END, m.id,
             CASE WHEN m.run_id IS NULL THEN 'null' ELSE '"' || m.run_id || '"' END, m.sequence, m.sequence, m.created_at, m.created_at),
           m.created_at
         FROM plan r JOIN requirement_message m ON m.requirement_id = r.id ORDER BY r.i, m.sequence`,
    ],
    [
      'run.trace.appended events',
      `INSERT INTO manager_event (id, type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at)
         SELECT ${R + M} + r.toff + s.k, 'run.trace.appended', r.id, r.ses, r.run, 'agent', r.run,
           printf('{"trace":{"createdAt":"%s","detail":%s,"id":"%s","kind":"%s","nativeType":null,"runId":"%s","sequence":%d,%s}}',
             ${traceAt},
             CASE s.k % 4 WHEN 2 THEN '"ok\\nok\\nok"' ELSE '"npm test -- compaction"' END,
             ${idSql('trc', 'r.toff + s.k')},
             CASE s.k % 4 WHEN 0 THEN 'reasoning' WHEN 1 THEN 'tool_call' WHEN 2 THEN 'tool_result' ELSE 'assistant_message' END,
             r.run, s.k,
             CASE s.k % 4
               WHEN 0 THEN '"status":null,"title":"Thinking about the merge step","toolCallId":null,"toolName":null'
               WHEN 3 THEN '"status":null,"title":"npm test -- compaction","toolCallId":null,"toolName":null'
               ELSE '"status":"' || CASE s.k % 4 WHEN 1 THEN 'started' ELSE 'completed' END || '","title":"npm test -- compaction","toolCallId":"call_' || (s.k / 4) || '","toolName":"shell"' END),
           ${traceAt}
         FROM plan r JOIN seq s ON s.k <= r.tcnt ORDER BY r.i, s.k`,
    ],
    [
      'search index',
      // What the search migration builds from existing rows (its triggers fill the FTS5 index), and the repositories keep in step.
      `INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT id, NULL, NULL, title, description FROM plan ORDER BY i;
       INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT requirement_id, id, sequence, '', body FROM requirement_message ORDER BY rowid`,
    ],
    ['drop plan', 'DROP TABLE plan; DROP TABLE seq'],
  ];
}

function exec(db: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
}

function all<T>(db: sqlite3.Database, sql: string): Promise<T[]> {
  return new Promise((resolve, reject) => db.all(sql, (err, rows) => (err ? reject(err) : resolve(rows as T[]))));
}

/**
 * Fills a migrated, stopped workspace's database: without a journal (a failed seed is thrown
 * away), in one transaction, rows in index order; then back to WAL as the manager keeps it.
 */
async function seed(databasePath: string, shape: Shape, label: string, verbose = false): Promise<void> {
  const db = new sqlite3.Database(databasePath);
  try {
    await exec(
      db,
      'PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1048576; PRAGMA temp_store = MEMORY; PRAGMA locking_mode = EXCLUSIVE',
    );
    await exec(db, 'BEGIN');
    for (const [name, sql] of seedStatements(shape, Date.now())) {
      const t = Date.now();
      await exec(db, sql);
      if (verbose) {
        progress(`scale: ${label}: ${name} in ${round((Date.now() - t) / 1000, 1)} s`);
      }
    }
    await exec(db, 'COMMIT');
    await exec(db, 'PRAGMA locking_mode = NORMAL; PRAGMA journal_mode = WAL');
    const [counts] = await all<{ r: number; m: number; e: number; seq: number }>(
      db,
      `SELECT (SELECT COUNT(*) FROM requirement) AS r, (SELECT COUNT(*) FROM requirement_message) AS m, (SELECT MAX(id) FROM manager_event) AS e,
         (SELECT seq FROM sqlite_sequence WHERE name = 'manager_event') AS seq`,
    );
    if (
      counts?.r !== shape.requirements ||
      counts.m !== shape.messages ||
      counts.e !== shape.events ||
      counts.seq !== shape.events
    ) {
      throw new Error(`scale: ${label} seeded ${JSON.stringify(counts)}, expected ${JSON.stringify(shape)}`);
    }
  } finally {
    await new Promise<void>((resolve) => db.close(() => resolve()));
  }
}

/** Starts the manager once on a fresh sandbox (migrations), stops it, returns the database path. */
async function migratedSandbox(): Promise<{ sandbox: Sandbox; databasePath: string }> {
  const sandbox = makeSandbox();
  const manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
  const databasePath = path.join(manager.dataDirectory(), 'factory.sqlite');
  await manager.stop();
  return { databasePath, sandbox };
}

async function timedStart(sandbox: Sandbox, env: NodeJS.ProcessEnv): Promise<{ manager: ManagerProcess; ms: number }> {
  const t = performance.now();
  const manager = await startManager({ args: ['--log-level', 'warn'], env, sandbox });
  return { manager, ms: performance.now() - t };
}

/** One keep-alive connection per manager: the figure is the server's work, not TCP setup. */
class Client {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  constructor(readonly manager: ManagerProcess) {}

  /** GET `path`; resolves with the elapsed milliseconds (request sent → body read) and the body. */
  get(pathname: string): Promise<{ ms: number; status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const t = performance.now();
      const req = http.get(
        `${this.manager.origin}${pathname}`,
        { agent: this.agent, headers: { authorization: `Bearer ${this.manager.token}` } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              body: Buffer.concat(chunks).toString('utf8'),
              ms: performance.now() - t,
              status: res.statusCode ?? 0,
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
    });
  }

  async json(pathname: string): Promise<Json> {
    const { body, status } = await this.get(pathname);
    if (status !== 200) {
      throw new Error(`scale: GET ${pathname} → ${status}: ${body.slice(0, 300)}`);
    }
    return JSON.parse(body);
  }

  /** Follows nextCursor (200 items a page) until `item` items were listed; the cursor after it. */
  async cursorAfter(pathname: string, item: number): Promise<string> {
    let cursor: string | null = null;
    for (let seen = 0; seen < item;) {
      const limit = Math.min(200, item - seen);
      const page: { items: unknown[]; nextCursor: string | null } = await this.json(
        `${pathname}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      seen += page.items.length;
      cursor = page.nextCursor;
      if (!cursor) {
        throw new Error(`scale: ${pathname} ended after ${seen} items`);
      }
    }
    return cursor!;
  }

  /** Opens the event stream after `after`; resolves when the server ended it, with the frames' ids. */
  replay(after: number): Promise<{ ms: number; ids: number[]; firstData: string }> {
    return new Promise((resolve, reject) => {
      const t = performance.now();
      const req = http.get(
        `${this.manager.origin}/api/events?after=${after}`,
        { agent: this.agent, headers: { accept: 'text/event-stream', authorization: `Bearer ${this.manager.token}` } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            const ms = performance.now() - t;
            const ids = [...text.matchAll(/^id: ?(\d+)$/gm)].map((m) => Number(m[1]));
            resolve({ firstData: /^data: ?(.*)$/m.exec(text)?.[1] ?? '', ids, ms });
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error('scale: replay did not end')));
      req.on('error', reject);
    });
  }

  /** The id of the first event after `after` (the stream stays open: it is closed here). */
  firstEventAfter(after: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        `${this.manager.origin}/api/events?after=${after}`,
        { headers: { accept: 'text/event-stream', authorization: `Bearer ${this.manager.token}` } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            const id = /^id: ?(\d+)$/m.exec(text);
            if (id) {
              req.destroy();
              resolve(Number(id[1]));
            }
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('scale: no event after the seed')));
      req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

interface Pair {
  large: number[];
  small: number[];
}

/** `samples` rounds of one measurement on each workspace, alternating which goes first. */
async function interleaved(samples: number, measure: (which: 'large' | 'small') => Promise<number>): Promise<Pair> {
  const pair: Pair = { large: [], small: [] };
  for (let i = 0; i < samples; i++) {
    const order: Array<'large' | 'small'> = i % 2 === 0 ? ['large', 'small'] : ['small', 'large'];
    for (const which of order) {
      pair[which].push(await measure(which));
    }
  }
  pair.large.sort((a, b) => a - b);
  pair.small.sort((a, b) => a - b);
  return pair;
}

function figures(label: string, pair: Pair): Figure[] {
  const out: Figure[] = [];
  for (const p of [50, 99]) {
    const large = percentile(pair.large, p);
    const small = percentile(pair.small, p);
    out.push(
      { name: `${label} p${p} large`, unit: 'ms', value: round(large) },
      { name: `${label} p${p} small`, unit: 'ms', value: round(small) },
      {
        name: `${label} p${p} large/small`,
        target: { op: '<=', value: TARGET_RATIO },
        unit: '×',
        value: round(large / small),
      },
    );
  }
  return out;
}

/**
 * `agent-manager db copy --to <url>` of a stopped, seeded workspace (the built CLI, as a user runs
 * it; the store variable unset, or the CLI would say the workspace runs on PostgreSQL already).
 */
function copyToPostgres(sandbox: Sandbox, url: string): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, CODE_FACTORY_HOME: sandbox.home };
  delete env.CODE_FACTORY_DATABASE_URL;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'bin', 'agent-manager.js'), 'db', 'copy', '--to', url, '--workspace', sandbox.workspace],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20 * 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve(out);
      } else {
        reject(new Error(`scale: db copy exited with ${code}: ${out.trim().split('\n').slice(-5).join(' / ')}`));
      }
    });
  });
}

/**
 * With `postgresUrl`, the PostgreSQL variant: both workspaces seeded on SQLite as always, copied
 * into their schemas with `db copy`, and every manager started on PostgreSQL.
 */
export async function scaleScenario({ postgresUrl }: { postgresUrl?: string } = {}): Promise<ScenarioResult> {
  const started = Date.now();
  const elapsed = () => round((Date.now() - started) / 1000, 0);
  const reduced = process.env['BENCH_SCALE_SHAPE'] === 'small';
  const shape = reduced ? REDUCED_LARGE : postgresUrl ? POSTGRES_LARGE : FULL_LARGE;
  const storeEnv: NodeJS.ProcessEnv = postgresUrl ? { CODE_FACTORY_DATABASE_URL: postgresUrl } : {};
  const [large, small] = await Promise.all([migratedSandbox(), migratedSandbox()]);
  const managers: ManagerProcess[] = [];
  try {
    progress(`scale: seeding ${shape.requirements} Requirements, ${shape.messages} messages, ${shape.events} events`);
    const seedStart = Date.now();
    await seed(large.databasePath, shape, 'large', !reduced);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const databaseMb = fs.statSync(large.databasePath).size / 1024 / 1024;
    progress(`scale: seeded in ${round(seedSeconds, 1)} s (${round(databaseMb, 0)} MB); small workspace`);
    await seed(small.databasePath, SMALL, 'small');
    const storeFigures: Figure[] = [];
    if (postgresUrl) {
      progress(`scale: db copy of the large workspace to PostgreSQL; at ${elapsed()} s`);
      const copyStart = Date.now();
      const copied = await copyToPostgres(large.sandbox, postgresUrl);
      const copySeconds = (Date.now() - copyStart) / 1000;
      progress(
        `scale: copied in ${round(copySeconds, 1)} s (${/Copied .*/.exec(copied)?.[0] ?? 'no summary'}); small workspace`,
      );
      await copyToPostgres(small.sandbox, postgresUrl);
      const [size] = await pgQuery<{ bytes: string }>(
        large.databasePath,
        `SELECT SUM(pg_total_relation_size(c.oid))::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')`,
      );
      storeFigures.push(
        { name: `large workspace's messages (PostgreSQL shape)`, unit: '', value: shape.messages },
        { name: 'db copy to PostgreSQL (large workspace)', unit: 's', value: round(copySeconds, 1) },
        { name: 'schema size (large workspace)', unit: 'MB', value: round(Number(size?.bytes ?? 0) / 1024 / 1024, 0) },
      );
    }

    // Startup: spawn → banner, alternating (the migrating starts above warmed the OS caches);
    // the last pair started stays up for the reads.
    progress(`scale: startup × ${STARTUP_SAMPLES} each; at ${elapsed()} s`);
    const startup = await interleaved(STARTUP_SAMPLES - 1, async (which) => {
      const { manager, ms } = await timedStart(which === 'large' ? large.sandbox : small.sandbox, storeEnv);
      await manager.stop();
      return ms;
    });
    const lastLarge = await timedStart(large.sandbox, storeEnv);
    managers.push(lastLarge.manager);
    const lastSmall = await timedStart(small.sandbox, storeEnv);
    managers.push(lastSmall.manager);
    const last = { large: lastLarge, small: lastSmall };
    const m = { large: lastLarge.manager, small: lastSmall.manager };
    startup.large = [...startup.large, last.large.ms].sort((a, b) => a - b);
    startup.small = [...startup.small, last.small.ms].sort((a, b) => a - b);
    progress(
      `scale: startup (ms) large ${startup.large.map((ms) => Math.round(ms)).join(' ')}, small ${startup.small.map((ms) => Math.round(ms)).join(' ')}; at ${elapsed()} s`,
    );
    const client = { large: new Client(m.large), small: new Client(m.small) };
    const bigIndex = {
      large: Math.floor((0.5 * shape.requirements) / shape.big),
      small: Math.floor((0.5 * SMALL.requirements) / SMALL.big),
    };
    const conversation = { large: scaleId('req', bigIndex.large), small: scaleId('req', bigIndex.small) };
    const deepCursor = {
      large: await client.large.cursorAfter('/api/requirements', DEEP_ITEM.large),
      small: await client.small.cursorAfter('/api/requirements', DEEP_ITEM.small),
    };
    const lateCursor = {
      large: await client.large.cursorAfter(`/api/requirements/${conversation.large}/messages`, LATE_SEQUENCE.large),
      small: await client.small.cursorAfter(`/api/requirements/${conversation.small}/messages`, LATE_SEQUENCE.small),
    };

    // The rows are the app's: pages come back full and in order, snapshots have their sessions.
    for (const which of ['large', 'small'] as const) {
      const first = await client[which].json('/api/requirements');
      const deep = await client[which].json(`/api/requirements?cursor=${encodeURIComponent(deepCursor[which])}`);
      const late = await client[which].json(
        `/api/requirements/${conversation[which]}/messages?cursor=${encodeURIComponent(lateCursor[which])}`,
      );
      const expectedDeep = scaleId('req', (which === 'large' ? shape : SMALL).requirements - 1 - DEEP_ITEM[which]);
      if (
        first.items.length !== 50 ||
        !first.items[0].session ||
        deep.items.length !== 50 ||
        deep.items[0].id !== expectedDeep ||
        late.items[0]?.sequence !== LATE_SEQUENCE[which] + 1
      ) {
        throw new Error(
          `scale: unexpected pages on the ${which} workspace: deep starts at ${deep.items[0]?.id}, late at ${late.items[0]?.sequence}`,
        );
      }
    }

    const reads: Array<[string, Record<'large' | 'small', string>]> = [
      ['requirements first page', { large: '/api/requirements', small: '/api/requirements' }],
      [
        'requirements deep page',
        {
          large: `/api/requirements?cursor=${encodeURIComponent(deepCursor.large)}`,
          small: `/api/requirements?cursor=${encodeURIComponent(deepCursor.small)}`,
        },
      ],
      [
        'conversation first page',
        {
          large: `/api/requirements/${conversation.large}/messages`,
          small: `/api/requirements/${conversation.small}/messages`,
        },
      ],
      [
        'conversation late page',
        {
          large: `/api/requirements/${conversation.large}/messages?cursor=${encodeURIComponent(lateCursor.large)}`,
          small: `/api/requirements/${conversation.small}/messages?cursor=${encodeURIComponent(lateCursor.small)}`,
        },
      ],
      // A word in a quarter of a million messages, one in four titles, and a prefix while typing.
      ['search common word', { large: '/api/search?q=merge', small: '/api/search?q=merge' }],
      ['search rare word', { large: '/api/search?q=conversation', small: '/api/search?q=conversation' }],
      ['search prefix', { large: '/api/search?q=flush%20dur', small: '/api/search?q=flush%20dur' }],
    ];
    const out: Figure[] = [
      { name: 'seed (large workspace)', unit: 's', value: round(seedSeconds, 1) },
      { name: 'database size (large workspace)', unit: 'MB', value: round(databaseMb, 0) },
      ...storeFigures,
    ];
    for (const [label, paths] of reads) {
      progress(`scale: ${label} × ${HTTP_SAMPLES} each; at ${elapsed()} s`);
      await interleaved(HTTP_WARMUP, async (which) => (await client[which].get(paths[which])).ms);
      const pair = await interleaved(HTTP_SAMPLES, async (which) => {
        const { ms, status } = await client[which].get(paths[which]);
        if (status !== 200) {
          throw new Error(`scale: GET ${paths[which]} → ${status}`);
        }
        return ms;
      });
      out.push(...figures(label, pair));
      if (label.startsWith('search')) {
        out.push({
          name: `${label} p95 large`,
          target: { op: '<=', value: SEARCH_P95_MS },
          unit: 'ms',
          value: round(percentile(pair.large, 95)),
        });
      }
    }

    progress(`scale: replay 200 events from an old cursor × ${SSE_SAMPLES} each; at ${elapsed()} s`);
    let replayChecked = false;
    const replay = await interleaved(SSE_SAMPLES, async (which) => {
      const { firstData, ids, ms } = await client[which].replay(REPLAY_AFTER[which]);
      if (ids.length !== 200 || ids[0] !== REPLAY_AFTER[which] + 1 || ids[199] !== REPLAY_AFTER[which] + 200) {
        throw new Error(
          `scale: replay after ${REPLAY_AFTER[which]} on the ${which} workspace sent ${ids.length} events (${ids[0]}…${ids[ids.length - 1]})`,
        );
      }
      if (!replayChecked && which === 'large') {
        // A seeded event carries the same snapshot, key for key, as the API's own response.
        const event = JSON.parse(firstData) as { type: string; payload: { requirement: Record<string, unknown> } };
        const live = await client.large.json(`/api/requirements/${event.payload.requirement['id'] as string}`);
        // dependsOn and autoStart are optional (a Requirement read alone lists its dependencies; events need not).
        const keys = (o: Record<string, unknown>) =>
          Object.keys(o)
            .filter((k) => k !== 'dependsOn' && k !== 'autoStart')
            .sort()
            .join(',');
        if (
          event.type !== 'requirement.created' ||
          keys(event.payload.requirement) !== keys(live) ||
          keys(event.payload.requirement['session'] as Record<string, unknown>) !== keys(live.session)
        ) {
          throw new Error(
            `scale: seeded ${event.type} event's snapshot (${keys(event.payload.requirement)}; session ${keys(event.payload.requirement['session'] as Record<string, unknown>)}) does not match the API's (${keys(live)}; session ${keys(live.session)})`,
          );
        }
        replayChecked = true;
      }
      return ms;
    });
    out.push(...figures('replay 200 events', replay));
    out.push(...figures('startup', startup));

    // The manager carries on from the seeded event ids.
    const created = await send(m.large.origin, 'POST', '/api/requirements', {
      provider: 'codex',
      title: 'after the seed',
    });
    const next = await client.large.firstEventAfter(shape.events);
    if (created.status !== 201 || next !== shape.events + 1) {
      throw new Error(
        `scale: a new Requirement on the seeded workspace got status ${created.status} and event id ${next}`,
      );
    }
    client.large.close();
    client.small.close();
    progress(`scale: done in ${elapsed()} s`);
    return {
      figures: out,
      notes: [
        ...(postgresUrl
          ? [
              `on PostgreSQL: both workspaces seeded on SQLite (seed and database size are the SQLite file's), moved with agent-manager db copy, managers on CODE_FACTORY_DATABASE_URL`,
            ]
          : []),
        ...(reduced ? ['BENCH_SCALE_SHAPE=small: a reduced large workspace (development run)'] : []),
        `large: ${shape.requirements} Requirements (${shape.big} with ${shape.bigMessages} messages), ${shape.messages} messages, ${shape.events} events; small: ${SMALL.requirements} Requirements (${SMALL.big} with ${SMALL.bigMessages} messages), ${SMALL.messages} messages, ${SMALL.events} events`,
        `deep page after item ${DEEP_ITEM.large} (small: ${DEEP_ITEM.small}); late conversation page after sequence ${LATE_SEQUENCE.large} (small: ${LATE_SEQUENCE.small}); replay after event ${REPLAY_AFTER.large} (small: ${REPLAY_AFTER.small})`,
        `${HTTP_SAMPLES} samples per read, ${SSE_SAMPLES} replays, ${STARTUP_SAMPLES} starts per workspace, interleaved; wall time ${elapsed()} s`,
      ],
      scenario: 'scale',
    };
  } finally {
    await Promise.all(managers.map((manager) => manager.stop()));
    large.sandbox.cleanup();
    small.sandbox.cleanup();
  }
}
