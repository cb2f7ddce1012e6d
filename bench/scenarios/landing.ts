import { execFile, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import type { Schemas } from '@libs/api-client';

import { ok } from '../../test/support/api';
import { WORKTREE_AGENT, createRequirement, git, settled, sh, startRun } from '../../test/support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from '../../test/support/manager-process';
import { SseConnection, SseEvent, connectSse } from '../../test/support/sse-client';
import { until } from '../../test/support/wait';
import { Figure, ScenarioResult, percentile, progress, round } from '../harness';

type Radar = Schemas['ConflictRadarResponseDto'];

const FILES = 20_000;
const LINES = 20;
const REQUIREMENTS = 20;
const FILES_PER_BRANCH = 100;
/** Cold passes (a manager restart each), runs and lands measured. */
const COLD_ROUNDS = 5;
const RUN_ROUNDS = 5;
/**
 * Lands, each of a different Requirement that conflicts with nobody, merge and squash in turn: 19,
 * 17 and 9 share no file with anyone; 10 and 12 share files with 11 and 13 (cleanly), whose
 * answers the land's new base then changes.
 */
const LAND_TARGETS = [19, 10, 17, 12, 9];
/** Requirements that get one more run (one more file committed), one per round. */
const RUN_TARGETS = [10, 11, 12, 13, 14];
/** Pairs (by index) that edit the same line of 3 common files: the radar must name them, with those files. */
const CONFLICTING: Array<[number, number]> = [
  [0, 1],
  [2, 3],
  [4, 5],
  [6, 7],
  [6, 8],
  [7, 8],
];
/** Pairs that edit 5 common files at opposite ends (line 1, line 20): merged by the radar, and clean. */
const TOUCHING: Array<[number, number]> = [
  [10, 11],
  [12, 13],
  [14, 15],
];
const SHARED_CONFLICTING = 3;
const SHARED_TOUCHING = 5;
/** Starts of the first runs at once: each checks out 20,000 files in a new worktree. */
const SETUP_CONCURRENCY = 4;

/** File n: in one of 100 folders by n % 100, so a branch's 100 files change every folder's tree. */
const fileName = (n: number) => `src/d${String(n % 100).padStart(2, '0')}/f${String(n).padStart(5, '0')}.txt`;
const fileText = (n: number) =>
  Array.from({ length: LINES }, (_, k) => `file ${n} line ${k + 1}: ${'x'.repeat(24)}\n`).join('');
/** Files owned by Requirement i (i·1000 + 0…99), files shared by overlap p (p·1000 + 500…), a run's extra file (i·1000 + 900 + round). */
const ownFile = (i: number, k: number) => i * 1000 + k;
const sharedFile = (overlap: number, s: number) => overlap * 1000 + 500 + s;
const extraFile = (i: number, k: number) => i * 1000 + 900 + k;

const gitAsync = async (cwd: string, ...args: string[]) =>
  (await promisify(execFile)('git', args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout;

/**
 * 20,000 text files of 20 lines in 100 folders, one commit on `main`, written as one pack by
 * `git fast-import`, then checked out: the person's checkout, clean, on the base.
 */
function generateRepository(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'person@example.com');
  git(dir, 'config', 'user.name', 'Person');
  git(dir, 'config', 'commit.gpgsign', 'false');
  // The agents' commits leave loose objects: no detached `git gc --auto` may repack during a measurement.
  git(dir, 'config', 'gc.auto', '0');
  git(dir, 'config', 'maintenance.auto', 'false');
  const chunks: string[] = [];
  for (let n = 0; n < FILES; n++) {
    const text = fileText(n);
    chunks.push(`blob\nmark :${n + 1}\ndata ${Buffer.byteLength(text)}\n${text}\n`);
  }
  const message = 'generated\n';
  chunks.push(
    `commit refs/heads/main\ncommitter Person <person@example.com> 1700000000 +0000\ndata ${message.length}\n${message}\n`,
  );
  for (let n = 0; n < FILES; n++) {
    chunks.push(`M 100644 :${n + 1} ${fileName(n)}\n`);
  }
  chunks.push('\n');
  execFileSync('git', ['fast-import', '--quiet'], {
    cwd: dir,
    input: chunks.join(''),
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  git(dir, 'reset', '-q', '--hard', 'main');
}

interface Plan {
  /** Files whose first line the Requirement's run rewrites, and those whose last line it rewrites. */
  first: number[];
  last: number[];
}

/** Each Requirement's 100 files: its share of the overlaps, then files of its own. */
function plans(): Plan[] {
  const out: Plan[] = Array.from({ length: REQUIREMENTS }, () => ({ first: [], last: [] }));
  [...CONFLICTING, ...TOUCHING].forEach(([a, b], p) => {
    const touching = p >= CONFLICTING.length;
    for (let s = 0; s < (touching ? SHARED_TOUCHING : SHARED_CONFLICTING); s++) {
      out[a].first.push(sharedFile(p, s));
      (touching ? out[b].last : out[b].first).push(sharedFile(p, s));
    }
  });
  out.forEach((plan, i) => {
    for (let k = 0; plan.first.length + plan.last.length < FILES_PER_BRANCH; k++) {
      plan.first.push(ownFile(i, k));
    }
  });
  return out;
}

/** The agent's command: one commit of its edits (sed -i edits each file apart: line 1, or line 20, of each). */
function editCommand(i: number, plan: Plan, message: string): string {
  const steps: string[] = [];
  if (plan.first.length > 0) {
    steps.push(`sed -i '1s/.*/edited by requirement ${i} (first line)/' ${plan.first.map(fileName).join(' ')}`);
  }
  if (plan.last.length > 0) {
    steps.push(`sed -i '${LINES}s/.*/edited by requirement ${i} (last line)/' ${plan.last.map(fileName).join(' ')}`);
  }
  steps.push(`git commit -q -am '${message}'`);
  return steps.join(' && ');
}

/** The pairs the radar must find, as "idA idB" (unordered) → sorted paths. */
function expectedPairs(ids: string[], live: Set<number>): Map<string, string[]> {
  const expected = new Map<string, string[]>();
  CONFLICTING.forEach(([a, b], p) => {
    if (live.has(a) && live.has(b)) {
      const paths = Array.from({ length: SHARED_CONFLICTING }, (_, s) => fileName(sharedFile(p, s))).sort();
      expected.set([ids[a], ids[b]].sort().join(' '), paths);
    }
  });
  return expected;
}

/**
 * Throws unless the radar checked exactly the live Requirements, each clean onto `base` at its
 * branch's head, and found exactly the expected pairs with their files.
 */
function check(radar: Radar, ids: string[], live: Set<number>, base: string, heads: Map<string, string>): void {
  const rows = new Map(radar.requirements.map((r) => [r.requirementId, r]));
  const problems: string[] = [];
  for (const i of live) {
    const row = rows.get(ids[i]);
    if (!row) {
      problems.push(`requirement ${i} was not checked`);
    } else if (row.mergesCleanly !== true || row.baseSha !== base || row.headSha !== heads.get(ids[i])) {
      problems.push(
        `requirement ${i}: mergesCleanly ${row.mergesCleanly}, base ${row.baseSha?.slice(0, 8)} (want ${base.slice(0, 8)}), head ${row.headSha?.slice(0, 8)} (want ${heads.get(ids[i])?.slice(0, 8)})`,
      );
    }
  }
  if (radar.requirements.length !== live.size) {
    problems.push(`${radar.requirements.length} Requirements checked, ${live.size} live`);
  }
  const expected = expectedPairs(ids, live);
  const found = new Map(radar.pairs.map((p) => [[p.a, p.b].sort().join(' '), [...p.paths].sort()]));
  for (const [key, paths] of expected) {
    const got = found.get(key);
    if (!got || got.join(',') !== paths.join(',')) {
      problems.push(`pair ${key}: want ${paths.join(', ')}, got ${got?.join(', ') ?? 'no pair'}`);
    }
  }
  for (const key of found.keys()) {
    if (!expected.has(key)) {
      problems.push(`unexpected pair ${key}: ${found.get(key)?.join(', ')}`);
    }
  }
  if (problems.length > 0) {
    throw new Error(`the radar's answer is wrong: ${problems.slice(0, 8).join('; ')}`);
  }
}

async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++];
        await work(item);
      }
    }),
  );
}

const radarOf = (event: SseEvent) => (event.data.payload as { radar: Radar }).radar;
const isRadar = (event: SseEvent) => event.data.type === 'landing.conflicts.updated';

/** The manager's log (all its starts in this home append to it). */
const logFile = (manager: ManagerProcess) => path.join(manager.dataDirectory(), 'logs', 'agent-manager.log');
const logSize = (manager: ManagerProcess) => (fs.existsSync(logFile(manager)) ? fs.statSync(logFile(manager)).size : 0);

/** The radar passes the manager logged (debug level) after `offset` bytes of its log, oldest first. */
function loggedPasses(manager: ManagerProcess, offset: number): Array<{ ms: number; [key: string]: unknown }> {
  if (!fs.existsSync(logFile(manager))) {
    return [];
  }
  return fs
    .readFileSync(logFile(manager))
    .subarray(offset)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.includes('"conflict radar pass"') && line.endsWith('}'))
    .map((line) => JSON.parse(line) as { ms: number });
}

/**
 * Issue 28's `landing` figures on a 20,000-file repository with twenty Requirements, each on its
 * own branch of 100 changed files (six pairs conflicting on 3 files each, three more pairs sharing
 * 5 files without conflicting, the rest apart): the full radar on a cold manager (a restart: the
 * radar keeps its answers in memory, by commit), the radar's update after one run and after one
 * land, and the land itself. Every answer is checked: each live Requirement checked at its
 * branch's head against the base's current commit, exactly the conflicting pairs with their files;
 * after the lands, a cold pass must give the answers the incremental ones gave.
 */
export async function landingScenario(): Promise<ScenarioResult> {
  const sandbox: Sandbox = makeSandbox();
  const stops: number[] = [];
  const notes: string[] = [];
  let manager: ManagerProcess | null = null;
  let stream: SseConnection | null = null;
  const start = async () => {
    const m = await startManager({
      args: ['--log-level', 'debug'],
      env: { CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT },
      sandbox,
    });
    stream = await connectSse(`${m.origin}/api/events`);
    return m;
  };
  const stop = async () => {
    stream?.close();
    stream = null;
    const t0 = performance.now();
    await manager?.stop();
    stops.push(performance.now() - t0);
    manager = null;
  };
  try {
    progress(`landing: generating ${FILES} files`);
    const generatedAt = performance.now();
    generateRepository(sandbox.workspace);
    notes.push(`repository generated in ${Math.round(performance.now() - generatedAt)} ms`);
    manager = await start();
    const m0 = manager;
    const work = plans();
    progress(
      `landing: ${REQUIREMENTS} Requirements, each committing ${FILES_PER_BRANCH} changed files in its worktree`,
    );
    const ids: string[] = [];
    for (let i = 0; i < REQUIREMENTS; i++) {
      ids.push((await createRequirement(m0, { title: `Landing bench ${i}` })).id);
    }
    const setupAt = performance.now();
    await pool(
      ids.map((id, i) => ({ i, id })),
      SETUP_CONCURRENCY,
      async ({ i, id }) => {
        await startRun(m0, id, sh(editCommand(i, work[i], `requirement ${i}: ${FILES_PER_BRANCH} files`)));
        const { run } = await settled(m0, id, 1);
        if (run.status !== 'succeeded') {
          throw new Error(`the first run of requirement ${i} ended ${run.status}: ${run.error}`);
        }
      },
    );
    notes.push(`${REQUIREMENTS} worktrees and branches made in ${Math.round(performance.now() - setupAt)} ms`);
    const branches = new Map<string, string>();
    for (const id of ids) {
      const requirement = await ok(m0.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
      branches.set(id, requirement.worktree?.branch as string);
    }
    const top = sandbox.workspace;
    const heads = new Map<string, string>();
    const readHeads = async () => {
      for (const id of ids) {
        heads.set(id, (await gitAsync(top, 'rev-parse', `refs/heads/${branches.get(id)}`)).trim());
      }
      return (await gitAsync(top, 'rev-parse', 'refs/heads/main')).trim();
    };
    let base = await readHeads();
    for (const id of ids) {
      const changed = (await gitAsync(top, 'diff', '--name-only', `${base}...${heads.get(id)}`))
        .split('\n')
        .filter((l) => l !== '');
      if (changed.length !== FILES_PER_BRANCH) {
        throw new Error(
          `requirement ${ids.indexOf(id)}'s branch changes ${changed.length} files, not ${FILES_PER_BRANCH}`,
        );
      }
    }
    const live = new Set(ids.map((_, i) => i));
    // The person commits on main meanwhile (a file nobody else touches): every branch is behind its
    // base, so each answer is a real merge — work still on the base's commit would need none.
    fs.appendFileSync(path.join(top, fileName(FILES - 1)), 'the person was here\n');
    git(top, 'commit', '-q', '-am', 'a commit of the person on main');
    base = await readHeads();

    // 1. The full radar, cold: a restarted manager knows no answer; its first GET waits for the whole pass.
    const cold: number[] = [];
    const coldSpawned: number[] = [];
    const coldLogged: number[] = [];
    for (let r = 0; r < COLD_ROUNDS; r++) {
      progress(`landing: full radar on a restarted manager ${r + 1}/${COLD_ROUNDS}`);
      const offset = manager ? logSize(manager) : 0;
      await stop();
      const spawned = performance.now();
      manager = await start();
      const listening = performance.now();
      const answer = await ok(manager.api.GET('/api/conflicts'));
      const answered = performance.now();
      check(answer, ids, live, base, heads);
      cold.push(answered - listening);
      coldSpawned.push(answered - spawned);
      // The log is written asynchronously: its line may follow the answer by a little.
      const m = manager;
      const first = await until('the first radar pass in the log', async () => loggedPasses(m, offset)[0], 5_000).catch(
        () => null,
      );
      if (first) {
        coldLogged.push(first.ms);
        if (r === 0) {
          notes.push(`first cold pass as the manager logged it: ${JSON.stringify(first)}`);
        }
      }
    }

    // 2. One more run of one Requirement: one more file committed; timed from the run's end (its
    //    run.succeeded event) to the radar's event that has its new head.
    const afterRun: number[] = [];
    const refreshes: number[] = [];
    const passes: string[] = [];
    const m1 = manager;
    /** The manager's radar passes since `offset` of its log: ms (answers new, carried over a base move, pairs merged; database ms). */
    const passesSince = (offset: number) =>
      loggedPasses(m1, offset)
        .map(
          (p) => `${p.ms}(${String(p.answered)}a ${String(p.carried)}c ${String(p.merged)}m ${String(p.publishMs)}db)`,
        )
        .join(' ');
    for (const [k, i] of RUN_TARGETS.slice(0, RUN_ROUNDS).entries()) {
      progress(`landing: one more run of requirement ${i} (${k + 1}/${RUN_ROUNDS})`);
      const id = ids[i];
      const was = heads.get(id) as string;
      const sse = stream as SseConnection | null;
      if (!sse) {
        throw new Error('no event stream');
      }
      const from = sse.events.length;
      const logAt = logSize(m1);
      await startRun(
        m1,
        id,
        sh(
          `sed -i '1s/.*/one more edit by requirement ${i}/' ${fileName(extraFile(i, k))} && git commit -q -am 'one more file'`,
        ),
      );
      const ended = await sse.waitUntil(
        (e) => sse.events.indexOf(e) >= from && e.data.type === 'run.succeeded' && e.data.requirementId === id,
        `the run of requirement ${i} to end`,
        60_000,
      );
      const seen = await sse.waitUntil(
        (e) =>
          sse.events.indexOf(e) >= from &&
          isRadar(e) &&
          radarOf(e).requirements.some((row) => row.requirementId === id && row.headSha !== was),
        `the radar to see requirement ${i}'s new head`,
        60_000,
      );
      afterRun.push(seen.receivedAtMs - ended.receivedAtMs);
      await settled(m1, id, 2);
      // Where the time went: the worktree's refresh after the run (its requirement.updated), which the radar waits for.
      const refreshed = sse.events.find(
        (e) =>
          sse.events.indexOf(e) > sse.events.indexOf(ended) &&
          e.data.type === 'requirement.updated' &&
          e.data.requirementId === id &&
          (e.data.payload as { requirement: Schemas['RequirementResponseDto'] }).requirement.worktree?.headSha !== was,
      );
      if (refreshed) {
        refreshes.push(refreshed.receivedAtMs - ended.receivedAtMs);
      }
      passes.push(`run ${k + 1}: ${passesSince(logAt)}`);
      base = await readHeads();
      check(radarOf(seen), ids, live, base, heads);
      check(await ok(m1.api.GET('/api/conflicts')), ids, live, base, heads);
    }

    // 3. Lands of Requirements that conflict with nobody: the request, then until the radar's event
    //    has every other live Requirement on the new base (and the landed one gone from it).
    const lands: number[] = [];
    const afterLand: number[] = [];
    for (const [k, i] of LAND_TARGETS.entries()) {
      const method = k % 2 === 0 ? 'merge' : 'squash';
      progress(`landing: land requirement ${i} by ${method} (${k + 1}/${LAND_TARGETS.length})`);
      const id = ids[i];
      const sse = stream as SseConnection | null;
      if (!sse) {
        throw new Error('no event stream');
      }
      const from = sse.events.length;
      const logAt = logSize(m1);
      const t0 = performance.now();
      const landed = await ok(
        m1.api.POST('/api/requirements/{id}/land', { body: { method }, params: { path: { id } } }),
      );
      const landedAt = performance.timeOrigin + performance.now();
      lands.push(performance.now() - t0);
      live.delete(i);
      const commit = landed.commit as string;
      const seen = await sse.waitUntil(
        (e) => {
          if (sse.events.indexOf(e) < from || !isRadar(e)) {
            return false;
          }
          const radar = radarOf(e);
          return (
            !radar.requirements.some((row) => row.requirementId === id) &&
            radar.requirements.every((row) => row.baseSha === commit)
          );
        },
        `the radar to see ${commit.slice(0, 8)} as everyone's base`,
        60_000,
      );
      afterLand.push(Math.max(0, seen.receivedAtMs - landedAt));
      base = await readHeads();
      if (base !== commit) {
        throw new Error(`main is at ${base.slice(0, 8)} after the land, not at the landed ${commit.slice(0, 8)}`);
      }
      check(radarOf(seen), ids, live, base, heads);
      passes.push(`land ${k + 1}: ${passesSince(logAt)}`);
    }
    // The answers carried across lands must be what a cold pass computes from scratch.
    const lastEvent = (stream as SseConnection | null)?.events.filter(isRadar).pop();
    if (!lastEvent) {
      throw new Error('no landing.conflicts.updated event was seen');
    }
    const incremental = radarOf(lastEvent);
    progress('landing: a cold pass to compare with the incremental answers');
    const finalOffset = logSize(m1);
    await stop();
    manager = await start();
    const freshAt = performance.now();
    const fresh = await ok(manager.api.GET('/api/conflicts'));
    const freshMs = performance.now() - freshAt;
    check(fresh, ids, live, base, heads);
    const comparable = (radar: Radar) =>
      JSON.stringify({
        pairs: radar.pairs.map((p) => [[p.a, p.b].sort(), p.paths]).sort(),
        rows: radar.requirements
          .map((r) => [
            r.requirementId,
            r.mergesCleanly,
            r.behindBy,
            r.baseSha,
            r.headSha,
            r.conflictPaths,
            r.conflictsWith.map((c) => [c.requirementId, c.paths]).sort(),
          ])
          .sort(),
      });
    if (comparable(fresh) !== comparable(incremental)) {
      throw new Error(
        `the incremental radar differs from a cold pass: ${comparable(incremental).slice(0, 600)} vs ${comparable(fresh).slice(0, 600)}`,
      );
    }
    const m2 = manager;
    const freshPass = await until(
      'the cold pass in the log',
      async () => loggedPasses(m2, finalOffset)[0],
      5_000,
    ).catch(() => null);
    notes.push(
      `after the lands, ${live.size} Requirements further behind: cold GET ${Math.round(freshMs)} ms from the banner${freshPass ? `, pass as logged ${freshPass.ms} ms` : ''}; same answers as the incremental radar`,
    );
    const personal = git(top, 'status', '--porcelain', '--untracked-files=no');
    if (personal !== '' || git(top, 'rev-parse', 'HEAD').trim() !== base) {
      throw new Error(
        `the person's checkout of main did not follow the lands cleanly: HEAD ${git(top, 'rev-parse', 'HEAD').trim()}, status ${personal}`,
      );
    }
    const figures: Figure[] = [];
    const p95 = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        95,
      );
    const pairs = (REQUIREMENTS * (REQUIREMENTS - 1)) / 2;
    figures.push({
      name: `full radar, cold (${REQUIREMENTS} Requirements, ${pairs} pairs): GET /api/conflicts after a restart, p95 of ${COLD_ROUNDS}`,
      target: { op: '<=', value: 5000 },
      unit: 'ms',
      value: round(p95(cold), 0),
    });
    if (coldLogged.length > 0) {
      // The pass starts before the manager listens: the GET above sees only its end. Both must meet the target.
      figures.push({
        name: `full radar, cold: the whole first pass as the manager timed it, p95 of ${coldLogged.length}`,
        target: { op: '<=', value: 5000 },
        unit: 'ms',
        value: round(p95(coldLogged), 0),
      });
    }
    figures.push({
      name: `radar update after one run (run end → landing.conflicts.updated), p95 of ${afterRun.length}`,
      target: { op: '<=', value: 1000 },
      unit: 'ms',
      value: round(p95(afterRun), 0),
    });
    figures.push({
      name: `radar update after one land (land answered → landing.conflicts.updated), p95 of ${afterLand.length}`,
      target: { op: '<=', value: 1000 },
      unit: 'ms',
      value: round(p95(afterLand), 0),
    });
    figures.push({
      name: `land (POST /land, merge and squash in turn), p95 of ${lands.length}`,
      target: { op: '<=', value: 2000 },
      unit: 'ms',
      value: round(p95(lands), 0),
    });
    const list = (values: number[]) => values.map((v) => Math.round(v)).join(', ');
    notes.push(
      `cold GET from the listening banner: ${list(cold)} ms (from the process's spawn: ${list(coldSpawned)} ms${coldLogged.length > 0 ? `; pass as logged: ${list(coldLogged)} ms` : ''})`,
      `after a run: ${list(afterRun)} ms (of which the worktree's refresh: ${list(refreshes)} ms); after a land: ${list(afterLand)} ms; lands: ${list(lands)} ms`,
      `radar passes as the manager logged them, ms (answers new, of them carried over a base move, pairs merged, database ms): ${passes.join('; ')}`,
      `${CONFLICTING.length} conflicting pairs (${SHARED_CONFLICTING} files each), ${TOUCHING.length} pairs sharing ${SHARED_TOUCHING} files cleanly; the person's checkout is on main (each land moves it)`,
      `manager stops: ${list(stops)} ms`,
      `machine load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores at the end`,
    );
    return { figures, notes, scenario: 'landing' };
  } catch (err) {
    const m = manager;
    const alive = m !== null && m.child.exitCode === null && m.child.signalCode === null;
    throw new Error(
      `${(err as Error).message}; manager ${m === null ? 'not running' : alive ? 'alive' : 'exited'}; stderr: ${m?.stderr().slice(-1500) ?? ''}`,
    );
  } finally {
    await stop();
    removeInBackground(path.dirname(sandbox.home));
  }
}

/**
 * The sandbox holds twenty worktrees of 20,000 files: on a disk mounted with `discard` their
 * removal takes minutes, which nothing here measures. It goes on after the scenario, detached.
 */
function removeInBackground(dir: string): void {
  spawn('rm', ['-rf', dir], { detached: true, stdio: 'ignore' }).unref();
}
