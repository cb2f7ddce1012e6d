import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { initRepository } from '../../test/support/git-repo';
import { ManagerProcess, ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from '../../test/support/model-stub';
import { residentMb } from '../../test/support/proc';
import { Figure, ScenarioResult, percentile, progress, round } from '../harness';

type Cli = (typeof REAL_AGENT_CLIS)[number];

/** Sizes started at once; `FLEET_SIZES=1,5` for a quick look. */
const SIZES = (process.env.FLEET_SIZES ?? '1,5,10,20').split(',').map(Number);
/** What the model stub waits before each answer (a first answer also waits for every agent of the size to ask). */
const MODEL_DELAY_MS = Number(process.env.FLEET_MODEL_DELAY_MS ?? 4000);
/** Busy processes beside the fleet in the loaded pass (the "two busy processes"). */
const HOGS = 2;
const RUN_MARKER = 'AGENT_MANAGER_RUN_MARKER=';

interface Proc {
  pid: number;
  ppid: number;
  rssMb: number;
  argv: string[];
  marker: string | null;
}

function readProc(pid: number): Proc | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const marker = env.find((e) => e.startsWith(RUN_MARKER))?.slice(RUN_MARKER.length) ?? null;
    return { argv, marker, pid, ppid, rssMb: residentMb(pid) };
  } catch {
    return null; // gone, or not ours to read
  }
}

/**
 * The manager's descendants, each with the run it belongs to: a run is a subtree under one of the
 * manager's children (the sandbox, or the CLI where there is none), named by the marker some
 * process in it carries (the CLI may start its MCP servers with a cleared environment, and the
 * sandbox holds the marker only for what it starts). Subtrees with no marker (the manager's own
 * git) are left out.
 */
function runProcesses(root: number): Proc[] {
  const all = fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map((n) => readProc(Number(n)))
    .filter((p): p is Proc => p !== null && p.argv.length > 0);
  const children = new Map<number, Proc[]>();
  for (const p of all) {
    children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  }
  const subtree = (p: Proc): Proc[] => [p, ...(children.get(p.pid) ?? []).flatMap(subtree)];
  // The manager starts its programs from its spawner process: the runs are its children.
  const tops = (children.get(root) ?? []).flatMap((p) => (isSpawner(p) ? (children.get(p.pid) ?? []) : [p]));
  return tops.flatMap((top) => {
    const members = subtree(top);
    const marker = members.find((m) => m.marker !== null)?.marker ?? null;
    return marker === null ? [] : members.map((m) => ({ ...m, marker }));
  });
}

const isSpawner = (p: Proc) => p.argv.some((a) => a.endsWith('spawner-process.js'));

/** The manager's spawner process (one per manager, not per agent), or null before it started. */
function spawnerOf(root: number): number | null {
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const p = readProc(Number(name));
    if (p && p.ppid === root && isSpawner(p)) {
      return p.pid;
    }
  }
  return null;
}

/** What a process of a run is: the CLI itself, or something the manager adds for it. */
function roleOf(p: Proc): 'cli' | 'sandbox' | 'mcp' | 'other' {
  const program = path.basename(p.argv[0] ?? '');
  if (program === 'bwrap') {
    return 'sandbox';
  }
  if (p.argv.some((a) => a.endsWith('code-factory-cli.js')) && p.argv.includes('mcp')) {
    return 'mcp';
  }
  if (p.argv.some((a) => a.includes(`${path.sep}agent-clis${path.sep}`) || /(^|\/)(codex|claude)$/.test(a))) {
    return 'cli';
  }
  return 'other';
}

interface SizeResult {
  size: number;
  failed: number;
  firstRequestMs: number[];
  allDoneMs: number;
  managerRssMb: number;
  /** The manager's spawner process, peak: one per manager, whatever the number of agents. */
  spawnerRssMb: number;
  /** The manager's event-loop delay p99 from the starts until every run ended. */
  eventLoopP99Ms: number;
  /** The same figure for an idle Node.js process beside it (see `bystander`): the machine's floor. */
  bystanderP99Ms: number;
  /** Per running agent, at a moment every agent of the size was alive. */
  cliRssMb: number;
  addedRssMb: number;
  /** Beyond the sandbox's own (bubblewrap's two): the "≤ 1 extra process per run". */
  addedProcesses: number;
  sandboxProcesses: number;
  addedByRole: Record<string, number>;
}

async function fleetOfSize(
  manager: ManagerProcess,
  stub: ModelStub,
  provider: Cli['provider'],
  size: number,
  label: string,
): Promise<SizeResult> {
  const markers = Array.from(
    { length: size },
    (_, i) => `fleet-${label}-${size}-${i}-${Math.random().toString(36).slice(2, 8)}`,
  );
  // Every first answer waits until the size's last agent has asked (or a run ended without
  // asking): only then is every agent alive at once for the /proc sample, whatever the spread of
  // the CLIs' starts (at 20 on a slow day it is longer than an answer's delay). The all-done time
  // is the last agent's either way.
  let releaseFirstAnswers: () => void = () => undefined;
  const everyAgentAsked = new Promise<void>((resolve) => (releaseFirstAnswers = resolve));
  for (const marker of markers) {
    stub.scriptFor(marker, [
      {
        after: everyAgentAsked,
        then: { delayMs: MODEL_DELAY_MS, then: { arguments: {}, text: 'Looking at the timers.', tool: 'list_timers' } },
      },
      { delayMs: MODEL_DELAY_MS, then: { text: `Done: ${marker}.` } },
    ]);
  }
  const ids: string[] = [];
  for (const marker of markers) {
    const { data } = await manager.api.POST('/api/requirements', { body: { provider, title: marker } });
    ids.push(data!.id);
  }
  const pid = manager.child.pid!;
  let managerRss = residentMb(pid);
  let spawnerRss = 0;
  const spawnerPid = spawnerOf(pid);
  const rssTimer = setInterval(() => {
    managerRss = Math.max(managerRss, residentMb(pid));
    spawnerRss = spawnerPid === null ? NaN : Math.max(spawnerRss, residentMb(spawnerPid));
  }, 200);
  const idle = await bystander();
  await manager.api.GET('/api/metrics', { params: { query: { reset: 'true' } } });
  const requestsBefore = stub.requests.length;
  const startedAt = new Map<string, number>();
  const started = Date.now();
  await Promise.all(
    ids.map(async (id, i) => {
      startedAt.set(markers[i], Date.now());
      const { response } = await manager.api.POST('/api/requirements/{id}/start', {
        body: { message: `${markers[i]}: list the timers, then say done.` },
        params: { path: { id } },
      });
      if (!response.ok) {
        throw new Error(`start ${markers[i]}: ${response.status}`);
      }
    }),
  );
  // Every agent alive at once: sampled once all have asked the model for the first time (the
  // stub holds each answer MODEL_DELAY_MS), while the runs are still running.
  let sample: Proc[] | null = null;
  const firstRequest = new Map<string, number>();
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    for (const request of stub.requests.slice(requestsBefore)) {
      if (request.marker && markers.includes(request.marker) && !firstRequest.has(request.marker)) {
        firstRequest.set(request.marker, request.receivedAt - (startedAt.get(request.marker) ?? started));
      }
    }
    const runs = await Promise.all(
      ids.map(
        async (id) => (await manager.api.GET('/api/runs', { params: { query: { requirementId: id } } })).data?.items[0],
      ),
    );
    if (sample === null && (firstRequest.size === size || runs.some((r) => r && r.status !== 'running'))) {
      sample = firstRequest.size === size && runs.every((r) => r?.status === 'running') ? runProcesses(pid) : [];
      releaseFirstAnswers();
    }
    if (runs.every((r) => r && r.status !== 'running')) {
      clearInterval(rssTimer);
      const metrics = (await manager.api.GET('/api/metrics')).data;
      const bystanderP99Ms = await idle.p99();
      const failed = runs.filter((r) => r?.status !== 'succeeded');
      for (const run of failed) {
        progress(`fleet: ${label} size ${size}: run ${run?.id} ended ${run?.status}: ${run?.error ?? ''}`);
      }
      const perRun = new Map<string, Proc[]>();
      for (const p of sample ?? []) {
        if (p.marker) {
          perRun.set(p.marker, [...(perRun.get(p.marker) ?? []), p]);
        }
      }
      // No sample (a run ended before every agent was up): NaN rather than a made-up figure.
      const agents = perRun.size === 0 ? NaN : perRun.size;
      const sum = (ps: Proc[]) => ps.reduce((s, p) => s + p.rssMb, 0);
      const all = [...perRun.values()].flat();
      const added = all.filter((p) => roleOf(p) !== 'cli');
      const beyondSandbox = added.filter((p) => roleOf(p) !== 'sandbox');
      const byRole: Record<string, number> = {};
      for (const p of added) {
        byRole[roleOf(p)] = (byRole[roleOf(p)] ?? 0) + p.rssMb / agents;
      }
      return {
        addedByRole: byRole,
        addedProcesses: beyondSandbox.length / agents,
        sandboxProcesses: (added.length - beyondSandbox.length) / agents,
        addedRssMb: sum(added) / agents,
        allDoneMs: Date.now() - started,
        bystanderP99Ms,
        eventLoopP99Ms: metrics?.eventLoopDelayMs.p99 ?? NaN,
        cliRssMb: sum(all.filter((p) => roleOf(p) === 'cli')) / agents,
        failed: failed.length,
        firstRequestMs: [...firstRequest.values()].sort((a, b) => a - b),
        managerRssMb: managerRss,
        spawnerRssMb: spawnerRss,
        size,
      };
    }
    if (Date.now() > deadline) {
      clearInterval(rssTimer);
      void idle.p99();
      releaseFirstAnswers();
      throw new Error(`fleet ${label} size ${size}: runs still running after 10 minutes`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * An idle Node.js process started beside the manager (same scheduling group, same niceness),
 * timing its own event loop as the manager's metrics do (10 ms resolution). Its p99 is what the
 * machine alone allows while the agents start: the manager cannot do better than a process that
 * does nothing.
 */
async function bystander(): Promise<{ p99(): Promise<number> }> {
  const script = `const h = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 10 }); h.enable();
    process.stdin.on('end', () => { process.stdout.write(String(h.percentile(99) / 1e6)); process.exit(0); }); process.stdin.resume(); console.error('ready');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise((resolve) => child.stderr.once('data', resolve));
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const ended = new Promise((resolve) => child.on('close', resolve));
  return {
    p99: async () => {
      child.stdin.end();
      await ended;
      return Math.round(Number(out) * 100) / 100;
    },
  };
}

function startHogs(): ChildProcess[] {
  return Array.from({ length: HOGS }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
}

async function fleetFor(cli: Cli): Promise<{ figures: Figure[]; notes: string[] }> {
  const sandbox = makeSandbox();
  initRepository(sandbox.workspace);
  const stub = await ModelStub.start();
  const agentDir = fs.mkdtempSync(path.join('/var/tmp', `am-fleet-${cli.provider}-`));
  // The pinned CLIs of the source tree (the bench runs compiled, from dist/, where they are not).
  const executable = path.join(ROOT, 'test', 'agent-clis', 'node_modules', '.bin', path.basename(cli.executable));
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: {
      ...cli.env(stub, agentDir),
      CODE_FACTORY_CLAUDE_EXECUTABLE: executable,
      CODE_FACTORY_CODEX_EXECUTABLE: executable,
      GH_TOKEN: '',
      GITHUB_TOKEN: '',
    },
    sandbox,
  });
  const name = cli.provider === 'codex' ? 'Codex' : 'Claude Code';
  const figures: Figure[] = [];
  const notes: string[] = [];
  try {
    const results: SizeResult[] = [];
    for (const size of SIZES) {
      progress(`fleet (${name}): ${size} at once`);
      results.push(await fleetOfSize(manager, stub, cli.provider, size, cli.provider));
    }
    const hogSize = SIZES[SIZES.length - 1];
    progress(`fleet (${name}): ${hogSize} at once beside ${HOGS} busy processes`);
    const hogs = startHogs();
    let loaded: SizeResult;
    try {
      loaded = await fleetOfSize(manager, stub, cli.provider, hogSize, `${cli.provider}-loaded`);
    } finally {
      hogs.forEach((h) => h.kill('SIGKILL'));
    }
    const alone = percentile(results[0].firstRequestMs, 50);
    for (const r of [...results, { ...loaded, loaded: true }]) {
      const tag = `${name} ${r.size}${'loaded' in r ? ' + 2 busy' : ''}`;
      const p50 = percentile(r.firstRequestMs, 50);
      figures.push(
        { name: `${tag}: runs failed`, target: { op: '<=', value: 0 }, unit: '', value: r.failed },
        { name: `${tag}: start → first model request p50`, unit: 'ms', value: round(p50, 0) },
        {
          name: `${tag}: start → first model request p95`,
          unit: 'ms',
          value: round(percentile(r.firstRequestMs, 95), 0),
        },
        { name: `${tag}: first request p50 / one alone`, unit: '', value: round(p50 / alone) },
        { name: `${tag}: all done`, unit: 'ms', value: round(r.allDoneMs, 0) },
        { name: `${tag}: manager RSS (peak)`, unit: 'MB', value: round(r.managerRssMb, 0) },
        {
          name: `${tag}: the manager's spawner process RSS (peak; one per manager)`,
          unit: 'MB',
          value: round(r.spawnerRssMb, 0),
        },
        {
          name: `${tag}: manager event-loop delay p99`,
          ...(r.size >= 20 && !('loaded' in r) ? { target: { op: '<=' as const, value: 20 } } : {}),
          unit: 'ms',
          value: r.eventLoopP99Ms,
        },
        {
          name: `${tag}: an idle process's event-loop delay p99 (the machine's floor)`,
          unit: 'ms',
          value: r.bystanderP99Ms,
        },
        { name: `${tag}: CLI RSS per agent`, unit: 'MB', value: round(r.cliRssMb, 1) },
        {
          name: `${tag}: RSS the manager adds per agent`,
          target: { op: '<=', value: 30 },
          unit: 'MB',
          value: round(r.addedRssMb, 1),
        },
        {
          name: `${tag}: processes the manager adds per agent beyond the sandbox's`,
          target: { op: '<=', value: 1 },
          unit: '',
          value: round(r.addedProcesses, 2),
        },
      );
      notes.push(
        `${tag}: sandbox processes per agent ${round(r.sandboxProcesses, 2)}; added RSS per agent by role ${JSON.stringify(Object.fromEntries(Object.entries(r.addedByRole).map(([k, v]) => [k, round(v, 1)])))}`,
      );
    }
  } finally {
    await manager.stop();
    await stub.close();
    sandbox.cleanup();
    fs.rmSync(agentDir, { force: true, recursive: true });
    fs.rmSync(`${agentDir}.home`, { force: true, recursive: true });
  }
  return { figures, notes };
}

/**
 * `fleet`: the real Codex CLI, then Claude Code, through the model stub: 1, 5, 10 and 20
 * Requirements started at once in their own worktrees (sandbox on), each run one tool call
 * (`list_timers`, through the run's tools) and an answer; then the largest size beside two busy
 * processes. What the manager adds per agent is measured from /proc while every agent is alive.
 */
export async function fleetScenario(): Promise<ScenarioResult> {
  const figures: Figure[] = [];
  const notes: string[] = [];
  const clis = (process.env.FLEET_CLIS ?? 'codex,claude-code').split(',');
  for (const cli of REAL_AGENT_CLIS.filter((c) => clis.includes(c.provider))) {
    const result = await fleetFor(cli);
    figures.push(...result.figures);
    notes.push(...result.notes);
  }
  return { figures, notes, scenario: 'fleet' };
}
