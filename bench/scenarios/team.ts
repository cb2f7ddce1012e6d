import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';

import type autocannon from 'autocannon';
import { Client } from 'pg';

import { boardNameFromOrigin, boardSchema } from '@server/core/board/board-name';
import { BOARD_LEASE_MS } from '@server/core/database/postgres/postgres-board';

import { send } from '../../test/support/http';
import { git, initRepository } from '../../test/support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from '../../test/support/manager-process';
import { dropSchemasSync } from '../../test/support/postgres';
import { SseConnection, connectSse } from '../../test/support/sse-client';
import { until } from '../../test/support/wait';
import { Figure, ScenarioResult, percentile, progress, round } from '../harness';
import { replyLoad as replies } from './replies';

/** Replies committed on A and timed at C's client, paced. */
const LATENCY_EVENTS = 400;
/** Sent first at the same rate and not timed: B and C have just joined (their code is cold). */
const LATENCY_WARMUP = 50;
const LATENCY_RATE_PER_S = 50;
/** The replies load, as the `replies` scenario's: 32 connections for 8 s. */
const CONNECTIONS = 32;
const DURATION_S = 8;
/** Requirements replied to, running on each runner (the replies land queued behind their runs). */
const REQUIREMENTS_PER_RUNNER = 6;
const PEOPLE = ['Ada', 'Bob', 'Cyd'] as const;

interface Runner {
  person: (typeof PEOPLE)[number];
  manager: ManagerProcess;
  alive: boolean;
}

/**
 * Team mode (issue 29): three runners on one board, each with its own home and its own clone of
 * one bare origin, on one PostgreSQL server.
 *
 * 1. Event latency across runners: replies committed on A at 50/s, timed from the event's
 *    creation in A's write transaction (its `createdAt`, as `sse-fanout` defines commit→client)
 *    to their arrival on a client of C's stream (NOTIFY, then C reads the table); a client of
 *    A's own stream gives the local figure beside it.
 * 2. Reply throughput: the `replies` load (autocannon, 32 connections, 8 s) on one runner of
 *    the board, then the same load split over the three; the same Requirements either way. For
 *    reference, the same load on A while it is still alone on the board (B and C join after it):
 *    what the other runners' presence costs the one that takes the load.
 * 3. Failover: kill -9 of the leader, then the time until another runner's `am_runner` row
 *    says it leads (the online runner with the latest `leader_since`, as PostgresBoard.runners()).
 */
export async function teamScenario(postgresUrl: string | undefined): Promise<ScenarioResult> {
  if (!postgresUrl) {
    throw new Error('team runs on PostgreSQL only: no server was given');
  }
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-bench-team-'));
  const origin = path.join(base, 'origin.git');
  const schema = boardSchema(boardNameFromOrigin(origin));
  const sandboxes: Sandbox[] = [];
  const runners: Runner[] = [];
  let db: Client | undefined;
  try {
    const seed = path.join(base, 'seed');
    initRepository(seed);
    git(base, 'clone', '-q', '--bare', seed, origin);
    for (let i = 0; i < PEOPLE.length; i++) {
      const sandbox = makeSandbox();
      sandboxes.push(sandbox);
      fs.rmSync(sandbox.workspace, { force: true, recursive: true });
      git(base, 'clone', '-q', origin, sandbox.workspace);
    }
    const join = async (indices: number[]) => {
      // At once, as people would: the board's start lock lets them in one at a time.
      const starts = await Promise.allSettled(
        indices.map((i) =>
          startManager({
            args: ['--board', '--person-name', PEOPLE[i], '--log-level', 'warn'],
            env: { CODE_FACTORY_DATABASE_URL: postgresUrl },
            sandbox: sandboxes[i],
          }),
        ),
      );
      starts.forEach(
        (start, k) =>
          start.status === 'fulfilled' &&
          runners.push({ alive: true, manager: start.value, person: PEOPLE[indices[k]] }),
      );
      const failed = starts.find((start) => start.status === 'rejected');
      if (failed) {
        throw failed.reason; // the ones that started are stopped below
      }
    };

    progress('team: A alone on the board first, for the reference load');
    await join([0]);
    const requirements = new Map<string, string[]>();
    const startOn = async (runner: Runner) => {
      const ids: string[] = [];
      for (let i = 0; i < REQUIREMENTS_PER_RUNNER; i++) {
        ids.push(await startRequirement(runner.manager, `replies ${runner.person} ${i}`));
      }
      requirements.set(runner.person, ids);
    };
    await startOn(runners[0]);
    await replies(runners[0].manager, requirements.get(PEOPLE[0])!, 4, 2);
    progress(`team: POST /reply for ${DURATION_S}s with ${CONNECTIONS} connections, A alone on the board`);
    const alone = toLoad([await replies(runners[0].manager, requirements.get(PEOPLE[0])!, CONNECTIONS, DURATION_S)]);

    progress('team: B and C join at once');
    const joining = Date.now();
    await join([1, 2]);
    const joinSeconds = (Date.now() - joining) / 1000;
    db = new Client({ connectionString: postgresUrl, options: `-c search_path=${schema}` });
    await db.connect();
    const [a, b, c] = runners;

    const latency = await eventLatency(a.manager, c.manager);
    await startOn(b);
    await startOn(c);
    const throughput = await replyThroughput(runners, [...requirements.values()].flat());
    const failover = await leaderFailover(db, runners);

    return {
      figures: [
        { name: 'A→C commit→client p50', unit: 'ms', value: round(percentile(latency.acrossMs, 50)) },
        { name: 'A→C commit→client p95', unit: 'ms', value: round(percentile(latency.acrossMs, 95)) },
        {
          name: 'A→C commit→client p99',
          target: { op: '<=', value: 50 },
          unit: 'ms',
          value: round(percentile(latency.acrossMs, 99)),
        },
        { name: 'A→A commit→client p99 (same runner)', unit: 'ms', value: round(percentile(latency.localMs, 99)) },
        {
          name: "C's stream: A's events, each once, in A's order",
          target: { op: '>=', value: 1 },
          unit: '',
          value: latency.sameOrder ? 1 : 0,
        },
        { name: 'reply throughput, A alone on the board (reference)', unit: 'req/s', value: round(alone.rate, 0) },
        { name: 'reply throughput, one runner of three', unit: 'req/s', value: round(throughput.one.rate, 0) },
        { name: 'reply throughput, three runners', unit: 'req/s', value: round(throughput.three.rate, 0) },
        {
          name: 'reply throughput three / one',
          unit: '',
          value: round(throughput.three.rate / throughput.one.rate, 3),
        },
        { name: 'reply latency p99, A alone on the board', unit: 'ms', value: alone.p99 },
        { name: 'reply latency p99, one runner of three', unit: 'ms', value: throughput.one.p99 },
        { name: 'reply latency p99, three runners (worst runner)', unit: 'ms', value: throughput.three.p99 },
        {
          name: 'reply errors',
          target: { op: '<=', value: 0 },
          unit: '',
          value: alone.errors + throughput.one.errors + throughput.three.errors,
        },
        ...failover.figures,
      ],
      notes: [
        `runners: A ${a.person}, B ${b.person}, C ${c.person}; B and C joined A's board at once in ${round(joinSeconds, 1)} s`,
        `reference: ${CONNECTIONS} connections for ${DURATION_S} s on A alone on the board, over its ${REQUIREMENTS_PER_RUNNER} Requirements, before B and C joined`,
        `${latency.acrossMs.length} events timed on C and ${latency.localMs.length} on A, committed on A at ${LATENCY_RATE_PER_S}/s; latency from the event's createdAt (A's write transaction, ms resolution) to arrival`,
        `replies over ${REQUIREMENTS_PER_RUNNER * PEOPLE.length} Requirements (${REQUIREMENTS_PER_RUNNER} running on each runner), ${CONNECTIONS} connections for ${DURATION_S} s on A, then split ${splitConnections().join('/')} over A/B/C`,
        ...failover.notes,
      ],
      scenario: 'team',
    };
  } finally {
    await db?.end().catch(() => undefined);
    await Promise.all(runners.filter((r) => r.alive).map((r) => stopRunner(r)));
    for (const sandbox of sandboxes) {
      sandbox.cleanup();
    }
    dropSchemasSync([schema]);
    fs.rmSync(base, { force: true, recursive: true });
  }
}

/** Replies posted to A at a steady rate; their events timed on a client of C and one of A. */
async function eventLatency(
  a: ManagerProcess,
  c: ManagerProcess,
): Promise<{ acrossMs: number[]; localMs: number[]; sameOrder: boolean }> {
  const requirement = await startRequirement(a, 'latency');
  const [onA, onC] = await Promise.all([a, c].map((m) => connectSse(`${m.origin}/api/events`, {}, { parse: false })));
  try {
    progress(
      `team: ${LATENCY_EVENTS} replies committed on A at ${LATENCY_RATE_PER_S}/s (after ${LATENCY_WARMUP} untimed), timed on C's stream`,
    );
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const target = new URL(`${a.origin}/api/requirements/${requirement}/reply`);
    const post = (body: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          target,
          {
            agent,
            headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
            method: 'POST',
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const inflight: Array<Promise<number>> = [];
    const started = Date.now();
    for (let i = 0; i < LATENCY_WARMUP + LATENCY_EVENTS; i++) {
      const wait = started + (i * 1000) / LATENCY_RATE_PER_S - Date.now();
      if (wait > 0) {
        await new Promise((r) => setTimeout(r, wait));
      }
      inflight.push(
        post(
          JSON.stringify({ message: i < LATENCY_WARMUP ? `team warm-up ${i}` : `team latency ${i - LATENCY_WARMUP}` }),
        ),
      );
    }
    const statuses = await Promise.all(inflight);
    agent.destroy();
    const refused = statuses.filter((s) => s !== 202).length;
    if (refused > 0) {
      throw new Error(`${refused} of ${statuses.length} replies on A were refused`);
    }
    const measured = (stream: SseConnection) =>
      stream.events.filter((e) => e.event === 'message.created' && e.raw.includes('team latency '));
    await until(
      `${LATENCY_EVENTS} events on both streams`,
      () => Promise.resolve(measured(onA).length >= LATENCY_EVENTS && measured(onC).length >= LATENCY_EVENTS),
      30_000,
    );
    // Parsed only now: the receipt time was taken before any of this.
    const latencies = (stream: SseConnection) =>
      measured(stream)
        .map((e) => e.receivedAtMs - Date.parse((JSON.parse(e.raw) as { createdAt: string }).createdAt))
        .sort((x, y) => x - y);
    const ids = (stream: SseConnection) => measured(stream).map((e) => e.id);
    const [idsA, idsC] = [ids(onA), ids(onC)];
    const sameOrder =
      idsC.length === LATENCY_EVENTS && idsC.every((id, k) => id === idsA[k] && (k === 0 || id > idsC[k - 1]));
    return { acrossMs: latencies(onC), localMs: latencies(onA), sameOrder };
  } finally {
    onA.close();
    onC.close();
  }
}

/** 32 connections split over three runners as evenly as they go. */
function splitConnections(): number[] {
  return PEOPLE.map((_, i) => Math.floor(CONNECTIONS / PEOPLE.length) + (i < CONNECTIONS % PEOPLE.length ? 1 : 0));
}

interface Load {
  rate: number;
  p99: number;
  errors: number;
}

/**
 * The `replies` load on A (one runner of three), then split over A, B and C. Every runner replies to the same
 * Requirements (a third of them run on each runner, so most replies are for a run elsewhere,
 * which waits in the conversation), so the two loads differ only in where they enter the board.
 */
async function replyThroughput(runners: Runner[], requirements: string[]): Promise<{ one: Load; three: Load }> {
  progress('team: warming up the three runners');
  await Promise.all(runners.map((r) => replies(r.manager, requirements, 4, 2)));
  progress(`team: POST /reply for ${DURATION_S}s with ${CONNECTIONS} connections on one runner of three`);
  const one = toLoad([await replies(runners[0].manager, requirements, CONNECTIONS, DURATION_S)]);
  progress(`team: the same load split ${splitConnections().join('/')} over three runners`);
  const three = toLoad(
    await Promise.all(runners.map((r, i) => replies(r.manager, requirements, splitConnections()[i], DURATION_S))),
  );
  return { one, three };
}

/** Loads run at once, together: their throughputs add up; the worst p99 stands for them. */
function toLoad(results: autocannon.Result[]): Load {
  return {
    errors: results.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    rate: results.reduce((sum, r) => sum + r.requests.average, 0),
  };
}

/** Who leads the board by its runners' table: the online runner that took the leadership last. */
async function leaderOf(db: Client): Promise<string | undefined> {
  const { rows } = await db.query<{ person_name: string }>(
    `SELECT person_name FROM am_runner
     WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1) AND leader_since IS NOT NULL
     ORDER BY leader_since DESC LIMIT 1`,
    [BOARD_LEASE_MS / 1000],
  );
  return rows[0]?.person_name;
}

/** kill -9 of the leader; the time until another runner's row says it leads. */
async function leaderFailover(db: Client, runners: Runner[]): Promise<{ figures: Figure[]; notes: string[] }> {
  const person = await until('a leader on the board', () => leaderOf(db), BOARD_LEASE_MS);
  const doomed = runners.find((r) => r.person === person);
  if (!doomed) {
    throw new Error(`the board's leader ${person} is none of this scenario's runners`);
  }
  progress(`team: kill -9 of the leader (${person}), then polling am_runner for the next`);
  // Its agents outlive it (they are process group leaders of their own): ended below.
  const orphans = descendants(doomed.manager.child.pid);
  const killedAt = Date.now();
  await doomed.manager.kill9();
  doomed.alive = false;
  try {
    const budget = 2 * BOARD_LEASE_MS;
    const next = await until(
      'another runner leads',
      async () => {
        const now = await leaderOf(db);
        return now !== undefined && now !== person ? now : undefined;
      },
      budget + 10_000,
      20,
    ).catch(() => null);
    const seconds = (Date.now() - killedAt) / 1000;
    return {
      figures: [
        {
          name: 'failover after kill -9 of the leader',
          target: { op: '<=', value: budget / 1000 },
          unit: 's',
          value: round(seconds, 2),
        },
      ],
      notes: [
        next
          ? `failover: ${person} led and was killed; ${next} led ${round(seconds, 2)} s later (am_runner polled every 20 ms; lease ${BOARD_LEASE_MS / 1000} s)`
          : `failover: ${person} led and was killed; no other runner led within ${round(seconds, 1)} s`,
      ],
    };
  } finally {
    killAll(orphans);
  }
}

/** A Requirement made and started on `manager` (its idle agent keeps the run going). */
async function startRequirement(manager: ManagerProcess, title: string): Promise<string> {
  const created = await send(manager.origin, 'POST', '/api/requirements', {
    description: 'bench',
    provider: 'codex',
    title,
  });
  if (created.status !== 201) {
    throw new Error(`creating a Requirement on ${manager.origin}: ${created.status} ${created.text}`);
  }
  const id = created.json.id as string;
  const started = await send(manager.origin, 'POST', `/api/requirements/${id}/start`, { message: 'go' });
  if (started.status !== 202) {
    throw new Error(`starting ${id} on ${manager.origin}: ${started.status} ${started.text}`);
  }
  return id;
}

/** SIGTERM and a bounded wait; then SIGKILL, and whatever it started is ended too. */
async function stopRunner(runner: Runner): Promise<void> {
  const tree = descendants(runner.manager.child.pid);
  const exited = await Promise.race([
    runner.manager.stop().then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), 30_000)),
  ]);
  if (!exited) {
    progress(`team: ${runner.person}'s runner did not stop within 30 s: killed`);
    await runner.manager.kill9();
  }
  runner.alive = false;
  killAll(tree);
}

interface ProcessId {
  pid: number;
  /** /proc's start time: a pid reused by another process is not killed. */
  start: string;
}

function stat(pid: number): { ppid: number; start: string } | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), start: fields[19] };
  } catch {
    return null;
  }
}

/** Every process below `pid` now (Linux /proc; empty elsewhere). */
function descendants(pid: number | undefined): ProcessId[] {
  if (pid === undefined || !fs.existsSync('/proc/self/stat')) {
    return [];
  }
  const children = new Map<number, ProcessId[]>();
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    const info = stat(Number(entry));
    if (info) {
      children.set(info.ppid, [...(children.get(info.ppid) ?? []), { pid: Number(entry), start: info.start }]);
    }
  }
  const found: ProcessId[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

function killAll(processes: ProcessId[]): void {
  for (const { pid, start } of processes) {
    if (stat(pid)?.start === start) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
}
