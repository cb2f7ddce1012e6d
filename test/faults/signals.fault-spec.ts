import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { workspaceKey } from '@server/core/workspace/workspace';

import { query } from '../support/db-snapshot';
import { initRepository } from '../support/git-repo';
import { registerToken } from '../support/http';
import { ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { until } from '../support/wait';
import { apiClient, ok } from '../support/api';
import { checkInvariants } from './invariants';

const TREE_AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'tree-agent.js');
const BIN = path.join(ROOT, 'bin', 'agent-manager.js');

jest.setTimeout(5 * 60_000);

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
}

function proc(pid: number): Proc | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pgid: Number(fields[2]), pid, ppid: Number(fields[1]), state: fields[0] ?? '' };
  } catch {
    return null;
  }
}

/** Alive: exists and is not a zombie. */
function alive(pid: number): boolean {
  const p = proc(pid);
  return p !== null && p.state !== 'Z' && p.state !== 'X';
}

function childrenOf(pid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((p) => proc(p)?.ppid === pid);
}

/** Every process below `pid`, depth first. */
function descendants(pid: number): number[] {
  return childrenOf(pid).flatMap((child) => [child, ...descendants(child)]);
}

function cmdline(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

const isBubblewrap = (pid: number) => path.basename(cmdline(pid)[0] ?? '') === 'bwrap';

/** The processes of one run under the `npm start` tree: those with its marker, and the sandbox above them. */
function runTree(tree: NpmTree, marker: string): number[] {
  const marked = new Set(withEnv(`AGENT_MANAGER_RUN_MARKER=${marker}`));
  return descendants(tree.npm.pid!).filter(
    (pid) => marked.has(pid) || (isBubblewrap(pid) && descendants(pid).some((d) => marked.has(d))),
  );
}

/** What a process of the run is, by its program (bwrap, the agent's script, `sleep 600`), with its depth among its kind. */
function label(pid: number): string {
  const name = (p: number) => {
    const argv = cmdline(p);
    const script = argv.find((a) => a.endsWith('.js'));
    return path.basename(argv[0] ?? '?') === 'node' && script
      ? path.basename(script)
      : argv
          .slice(0, 2)
          .map((a) => path.basename(a))
          .join(' ');
  };
  const own = name(pid);
  let depth = 1;
  for (let p = proc(pid)?.ppid ?? 0; p > 1; p = proc(p)?.ppid ?? 0) {
    depth += name(p) === own ? 1 : 0;
  }
  return depth > 1 ? `${own} (${depth})` : own;
}

/** Every process whose environment carries `entry` (the run marker the manager sets). */
function withEnv(entry: string, match: 'exact' | 'prefix' = 'exact'): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const environ = fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      if (
        (match === 'exact' ? environ.includes(entry) : environ.some((e) => e.startsWith(entry))) &&
        alive(Number(name))
      ) {
        found.push(Number(name));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

interface NpmTree {
  npm: ChildProcess;
  sh: number;
  manager: number;
  origin: string;
  dataDirectory: string;
  output(): string;
}

/** `npm start` exactly as a person (or a supervisor) runs it: npm → sh → node scripts/start.js. */
async function npmStart(sandbox: Sandbox): Promise<NpmTree> {
  const npm = spawn('npm', ['start', '--silent', '--', '--workspace', sandbox.workspace, '--port', '0'], {
    cwd: ROOT,
    detached: true, // its own process group, as a terminal or a supervisor gives it
    env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: TREE_AGENT, CODE_FACTORY_HOME: sandbox.home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const origin = await until('the banner', async () => /API\s+(http:\/\/\S+)\/api/.exec(out)?.[1], 120_000);
  const sh = await until("npm's sh", async () => childrenOf(npm.pid!)[0]);
  const manager = await until('the manager under sh', async () => childrenOf(sh)[0]);
  const dataDirectory = path.join(sandbox.home, 'workspaces', workspaceKey(fs.realpathSync(sandbox.workspace)));
  registerToken(origin, fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim());
  return { dataDirectory, manager, npm, origin, output: () => out, sh };
}

/** The markers of every run started here: what a failed test leaves running is ended after it. */
const startedMarkers: string[] = [];

/** A running agent with a tool command in another process group; resolves with its run's marker. */
async function startAgent(
  origin: string,
  dataDirectory: string,
): Promise<{ runId: string; marker: string; requirementId: string }> {
  const api = apiClient(origin);
  const created = await ok(api.POST('/api/requirements', { body: { provider: 'codex', title: 'keep running' } }));
  const started = await api.POST('/api/requirements/{id}/start', {
    body: { message: 'go' },
    params: { path: { id: created.id } },
  });
  expect(started.status).toBe(202);
  const runId = started.data!.run!.id;
  const marker = await until("the run's process on record", async () => {
    const rows = await query<{ process_marker: string | null }>(
      path.join(dataDirectory, 'factory.sqlite'),
      'SELECT process_marker FROM agent_run WHERE id = ?',
      [runId],
    );
    return rows[0]?.process_marker ?? undefined;
  });
  startedMarkers.push(marker);
  // The agent and its detached tool command are both up.
  await until('the agent and its tool command', async () =>
    withEnv(`AGENT_MANAGER_RUN_MARKER=${marker}`).some((pid) => cmdline(pid)[0] === 'sleep'),
  );
  return { marker, requirementId: created.id, runId };
}

function logLines(dataDirectory: string): Array<Record<string, unknown>> {
  const logs = path.join(dataDirectory, 'logs');
  return fs
    .readdirSync(logs)
    .filter((f) => f.endsWith('.log'))
    .flatMap((f) => fs.readFileSync(path.join(logs, f), 'utf8').trim().split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function runStatus(dataDirectory: string, runId: string): Promise<string> {
  const rows = await query<{ status: string }>(
    path.join(dataDirectory, 'factory.sqlite'),
    'SELECT status FROM agent_run WHERE id = ?',
    [runId],
  );
  return rows[0].status;
}

/** What every graceful stop leaves: no process of the tree, no agent, the run cancelled, the lock gone. */
async function expectGracefulStop(tree: NpmTree, agent: { runId: string; marker: string }): Promise<void> {
  await until('the manager to exit', async () => !alive(tree.manager), 30_000);
  await until('npm and sh to exit', async () => !alive(tree.sh) && !alive(tree.npm.pid!), 10_000);
  expect(withEnv(`AGENT_MANAGER_RUN_MARKER=${agent.marker}`)).toEqual([]);
  expect(fs.existsSync(path.join(tree.dataDirectory, 'manager.lock'))).toBe(false);
  // Recorded by the stop itself, not settled later by a restart's reconciliation.
  expect(await runStatus(tree.dataDirectory, agent.runId)).toBe('cancelled');
  const messages = logLines(tree.dataDirectory).map((l) => l.message);
  expect(messages).toContain('agent manager stopped');
  expect(messages).not.toContain('agent manager forced to stop');
}

describe('signals as supervisors and people send them, to an `npm start` tree', () => {
  let sandbox: Sandbox;
  const trees: NpmTree[] = [];

  beforeEach(() => {
    sandbox = makeSandbox();
  });
  afterEach(() => {
    for (const tree of trees.splice(0)) {
      for (const pid of [
        tree.manager,
        tree.sh,
        tree.npm.pid!,
        ...startedMarkers.splice(0).flatMap((m) => withEnv(`AGENT_MANAGER_RUN_MARKER=${m}`)),
      ]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    sandbox.cleanup();
  });

  const targets: Array<[string, (tree: NpmTree) => void]> = [
    ['SIGTERM to npm', (t) => process.kill(t.npm.pid!, 'SIGTERM')],
    ["SIGTERM to npm's sh", (t) => process.kill(t.sh, 'SIGTERM')],
    ['SIGTERM to the manager', (t) => process.kill(t.manager, 'SIGTERM')],
    ['SIGTERM to the process group', (t) => process.kill(-t.npm.pid!, 'SIGTERM')],
    ['SIGINT to the process group (Ctrl+C)', (t) => process.kill(-t.npm.pid!, 'SIGINT')],
    ['SIGHUP to the process group (the terminal closed)', (t) => process.kill(-t.npm.pid!, 'SIGHUP')],
    [
      'SIGTERM to the group, and again during the stop',
      (t) => {
        process.kill(-t.npm.pid!, 'SIGTERM');
        setTimeout(() => {
          try {
            process.kill(t.manager, 'SIGTERM');
          } catch {
            // already stopped
          }
        }, 100);
      },
    ],
  ];

  it.each(targets)('%s ends in the graceful stop', async (_name, send_) => {
    const tree = await npmStart(sandbox);
    trees.push(tree);
    const agent = await startAgent(tree.origin, tree.dataDirectory);
    send_(tree);
    await expectGracefulStop(tree, agent);
  });

  it('SIGTERM to each agent-side process of the tree ends that process alone: the manager serves on and stops gracefully after', async () => {
    // A git workspace: the runs are in worktrees, as this wave makes them by default.
    initRepository(sandbox.workspace);
    const tree = await npmStart(sandbox);
    trees.push(tree);
    const manager = new Set([tree.npm.pid!, tree.sh, tree.manager]);
    // The first process besides the manager is its Codex model listing (`codex app-server`, here
    // the tree agent, which never answers and starts a tool command of its own).
    const listing = await until(
      'the model listing',
      async () => descendants(tree.npm.pid!).find((pid) => cmdline(pid).includes('app-server')),
      10_000,
    );
    process.kill(listing, 'SIGTERM');
    await until(
      'the listing and what it started to be gone',
      async () => withEnv('AGENT_MANAGER_RUN_MARKER=model-list-', 'prefix').length === 0 || undefined,
      10_000,
    );
    expect((await apiClient(tree.origin).GET('/api/health')).status).toBe(200);
    const first = await startAgent(tree.origin, tree.dataDirectory);
    // The manager starts its programs from its spawner process (core/process/spawner.ts), its
    // child: a signal to the spawner is one to the manager's own side, which it ignores (it
    // leaves only with the manager), and the runs it started go on.
    const spawnerPid = descendants(tree.npm.pid!).find(
      (pid) => proc(pid)?.ppid === tree.manager && cmdline(pid).some((a) => a.endsWith('spawner-process.js')),
    );
    expect(spawnerPid).toBeDefined();
    manager.add(spawnerPid!);
    process.kill(spawnerPid!, 'SIGTERM');
    process.kill(spawnerPid!, 'SIGINT');
    process.kill(spawnerPid!, 'SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect({ spawner: alive(spawnerPid!), run: await runStatus(tree.dataDirectory, first.runId) }).toEqual({
      run: 'running',
      spawner: true,
    });
    // Every process under npm besides npm, sh, the manager and its spawner belongs to the run (the
    // sandbox, the agent CLI, its tool command): the tree is found from /proc, not assumed.
    // The manager's own short-lived git (the conflict radar's poll, the worktree refresh) is not
    // the run's: it is left out, as is a process already gone (an empty cmdline: it exited between
    // the listing and the read).
    const ownGit = (pid: number) => proc(pid)?.ppid === spawnerPid && path.basename(cmdline(pid)[0] ?? '') === 'git';
    const members = descendants(tree.npm.pid!).filter(
      (pid) => !manager.has(pid) && cmdline(pid).length > 0 && !ownGit(pid),
    );
    expect(members.length).toBeGreaterThanOrEqual(2);
    expect(
      members.filter((pid) => !runTree(tree, first.marker).includes(pid)).map((pid) => cmdline(pid).join(' ')),
    ).toEqual([]);
    const shape = members.map(label).sort();
    let agent = first;
    for (const [i, role] of shape.entries()) {
      if (i > 0) {
        agent = await startAgent(tree.origin, tree.dataDirectory);
      }
      const target = runTree(tree, agent.marker).find((pid) => label(pid) === role);
      expect({ role, target: target !== undefined }).toEqual({ role, target: true });
      const agentProcess = runTree(tree, agent.marker).find((pid) => label(pid) === 'tree-agent.js');
      const managersChild = proc(target!)?.ppid === spawnerPid; // what the manager started, through its spawner
      process.kill(target!, 'SIGTERM');
      const died = await until(`${role} to exit`, async () => !alive(target!) || undefined, 2_000).catch(() => false);
      if (!died || (!managersChild && target !== agentProcess)) {
        // Ignored (a PID namespace's init without a handler), or it ended only the agent's own
        // tool command, which the agent outlives and decides about, as a real CLI does: the run
        // goes on. The pause is the behaviour under test: twice the grace the manager gives an
        // exited CLI's pipes to drain (EXIT_DRAIN_MS, 1 s, in agents/process-runner.ts), after
        // which it would have ended the run's tree had it taken the signal for the CLI's exit.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        expect({ agent: alive(agentProcess!), role, status: await runStatus(tree.dataDirectory, agent.runId) }).toEqual(
          { agent: true, role, status: 'running' },
        );
      } else {
        // The agent, or the process the manager started (the sandbox, whose init would keep the
        // agent's orphans alive), is gone: the run fails, its whole tree with it, nothing consumed.
        await until(
          `the run to end after SIGTERM to ${role}`,
          async () => (await runStatus(tree.dataDirectory, agent.runId)) !== 'running' || undefined,
          30_000,
        );
        expect({ role, status: await runStatus(tree.dataDirectory, agent.runId) }).toEqual({ role, status: 'failed' });
        await until(
          `no process of the run left (${role})`,
          async () => withEnv(`AGENT_MANAGER_RUN_MARKER=${agent.marker}`).length === 0 || undefined,
          10_000,
        );
        const requirement = await ok(
          apiClient(tree.origin).GET('/api/requirements/{id}', { params: { path: { id: agent.requirementId } } }),
        );
        expect(requirement.session.lastConsumedMessageSequence).toBe(0);
      }
      console.log(
        `SIGTERM to ${role}: ${died ? 'exited' : 'ignored'}; run ${await runStatus(tree.dataDirectory, agent.runId)}`,
      );
      expect(alive(tree.manager)).toBe(true);
      expect((await apiClient(tree.origin).GET('/api/health')).status).toBe(200);
    }
    // The last run may still be going (its tool command was the one ended); one more to be sure.
    const last =
      (await runStatus(tree.dataDirectory, agent.runId)) === 'running'
        ? agent
        : await startAgent(tree.origin, tree.dataDirectory);
    process.kill(-tree.npm.pid!, 'SIGTERM');
    await expectGracefulStop(tree, last);
    expect(await checkInvariants(tree.dataDirectory)).toEqual([]);
  });

  it('a second Ctrl+C forces a quick exit that still ends the agents and releases the lock', async () => {
    const tree = await npmStart(sandbox);
    trees.push(tree);
    const agent = await startAgent(tree.origin, tree.dataDirectory);
    // The agent ignores nothing, but its tool command is given 2 s after TERM: the forced exit
    // must not wait for that.
    process.kill(-tree.npm.pid!, 'SIGINT');
    await until(
      'the stop to begin',
      async () => logLines(tree.dataDirectory).some((l) => l.message === 'agent manager stopping'),
      10_000,
    );
    process.kill(tree.manager, 'SIGINT');
    await until('the manager to exit', async () => !alive(tree.manager), 10_000);
    expect(withEnv(`AGENT_MANAGER_RUN_MARKER=${agent.marker}`)).toEqual([]);
    expect(fs.existsSync(path.join(tree.dataDirectory, 'manager.lock'))).toBe(false);
    // The next start takes over at once and settles what the forced exit left running.
    const next = await startManager({ sandbox });
    try {
      await until('the run settled', async () => (await runStatus(next.dataDirectory(), agent.runId)) !== 'running');
    } finally {
      expect(await next.stop()).toBe(0);
    }
  });
});

describe('agent-manager start under signals', () => {
  let sandbox: Sandbox;

  beforeEach(() => {
    sandbox = makeSandbox();
  });
  afterEach(() => sandbox.cleanup());

  it('exits 0 after a graceful stop even when a second SIGTERM arrives during it', async () => {
    const manager = await startManager({ env: { CODE_FACTORY_CODEX_EXECUTABLE: TREE_AGENT }, sandbox });
    const agent = await startAgent(manager.origin, manager.dataDirectory());
    const exited = new Promise<number | null>((resolve) => manager.child.once('exit', resolve));
    manager.child.kill('SIGTERM');
    // The second signal lands once the graceful stop is under way (its first log line says so)
    // and before it is over (the process is still there to take it).
    await until(
      'the graceful stop to begin',
      async () => logLines(manager.dataDirectory()).some((l) => l.message === 'agent manager stopping'),
      10_000,
      10,
    );
    expect(manager.child.kill('SIGTERM')).toBe(true);
    expect(await exited).toBe(0);
    expect(withEnv(`AGENT_MANAGER_RUN_MARKER=${agent.marker}`)).toEqual([]);
    expect(await runStatus(manager.dataDirectory(), agent.runId)).toBe('cancelled');
    expect(fs.existsSync(path.join(manager.dataDirectory(), 'manager.lock'))).toBe(false);
  });

  it('does not take a zombie for a running manager: a killed one whose parent never reaps it', async () => {
    // A parent like a container's init that never calls wait(): the killed manager stays a zombie.
    const holder = spawn(
      'python3',
      [
        '-c',
        'import os, sys, time\npid = os.fork()\nif pid == 0:\n    os.execv(sys.argv[1], sys.argv[1:])\nprint(pid, flush=True)\ntime.sleep(600)\n',
        process.execPath,
        BIN,
        'start',
        '--workspace',
        sandbox.workspace,
        '--port',
        '0',
      ],
      { env: { ...process.env, CODE_FACTORY_HOME: sandbox.home }, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      let out = '';
      holder.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const pid = Number(await until('the forked manager', async () => /^(\d+)\n/.exec(out)?.[1]));
      const lock = path.join(
        sandbox.home,
        'workspaces',
        workspaceKey(fs.realpathSync(sandbox.workspace)),
        'manager.lock',
      );
      await until(
        'its lock with a URL',
        async () =>
          fs.existsSync(lock) && (JSON.parse(fs.readFileSync(lock, 'utf8')) as { url: string | null }).url !== null,
        30_000,
      );
      process.kill(pid, 'SIGKILL');
      await until('the manager to be a zombie', async () => proc(pid)?.state === 'Z');
      // kill(pid, 0) still succeeds on it; the next start must not be refused all the same.
      expect(() => process.kill(pid, 0)).not.toThrow();
      const next = await startManager({ sandbox });
      try {
        expect((await next.api.GET('/api/health')).status).toBe(200);
      } finally {
        expect(await next.stop()).toBe(0);
      }
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
