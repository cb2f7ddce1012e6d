import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { RUN_MARKER_VARIABLE, workspaceMarkerPrefix } from '@server/agents/process-tree';
import { resolveWorkspace } from '@server/core/workspace/workspace';
import type { RunningManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { createRequirement, git, initRepository, readReport, runsOf, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { ROOT, Sandbox, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

jest.setTimeout(300_000);

const BIN = path.join(ROOT, 'bin', 'agent-manager.js');

// The repository's own setup: it leaves what a real one would (a dependency folder, a note of its
// environment) and marks when it ran, so a start can show it ran earlier, when the copy was prepared.
const SETUP = `#!/bin/sh
node -e 'console.log(Date.now())' > .prepared-at
env | grep '^AGENT_MANAGER_' | grep -v '^AGENT_MANAGER_RUN_MARKER=' | sort > .setup-env
echo once >> .setup-count
mkdir -p deps && echo dependency > deps/installed.txt
`;

/**
 * Issue 48 §6: a pool of prepared working copies. A real in-process manager on a real repository
 * with a setup script, the synthetic agent as a real sandboxed child process, and the CLI's
 * `doctor --clean` as a real process on the same data directory.
 */
describe('prepared worktrees (worktreePool)', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const api = () => apiClient(manager.url);
  const pool = () => ok(api().GET('/api/workspace/worktree-pool'));
  const patch = async (values: Record<string, unknown>) =>
    expect((await api().PATCH('/api/configuration', { body: values })).status).toBe(200);
  const head = () => git(sandbox.workspace, 'rev-parse', 'main').trim();
  /** The pool once it holds `count` ready copies at the base's tip (and nothing filling). */
  const readyAt = (sha: string, count = 1) =>
    until(
      `${count} prepared copies at ${sha.slice(0, 8)}`,
      async () => {
        const now = await pool();
        const ready = now.copies.filter((copy) => copy.state === 'ready' && copy.baseSha === sha);
        return ready.length === count && now.copies.length === count ? now : undefined;
      },
      90_000,
      100,
    );

  beforeAll(async () => {
    // The configuration file's pool, not the tests' environment (which would override what PATCH writes).
    delete process.env.CODE_FACTORY_WORKTREE_POOL;
    sandbox = makeSandbox();
    // Where the synthetic agent writes its report.
    process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS = sandbox.shared;
    fs.writeFileSync(resolveWorkspace(sandbox.workspace, sandbox.home).defaultConfigPath, '{"worktreePool": 1}\n');
    initRepository(sandbox.workspace, {
      '.agent-manager/setup': SETUP,
      '.gitignore': 'deps/\n.prepared-at\n.setup-env\n.setup-count\n',
      'README.md': '# pooled\n',
    });
    git(sandbox.workspace, 'branch', 'other');
    manager = await startWorktreeManager(sandbox);
  });

  afterAll(async () => {
    process.env.CODE_FACTORY_WORKTREE_POOL = '0';
    delete process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS;
    await manager?.stop();
    sandbox?.cleanup();
  });

  it("prepares a copy at the base's tip, hands it to the next start without running setup again, and refills", async () => {
    const prepared = (await readyAt(head())).copies[0];
    expect(prepared).toMatchObject({ baseRef: 'main', state: 'ready' });
    expect(path.basename(prepared.path)).toMatch(/^pool-[0-9a-f]{8}$/);
    // Setup ran in it, then, with no Requirement's branch or ports yet.
    const preparedAt = Number(fs.readFileSync(path.join(prepared.path, '.prepared-at'), 'utf8'));
    expect(fs.readFileSync(path.join(prepared.path, '.setup-env'), 'utf8')).toBe(
      [
        'AGENT_MANAGER_BASE_REF=main',
        'AGENT_MANAGER_POOLED=1',
        `AGENT_MANAGER_ROOT=${fs.realpathSync(sandbox.workspace)}`,
        `AGENT_MANAGER_WORKTREE=${prepared.path}`,
        '',
      ].join('\n'),
    );
    const asked = Date.now();
    expect(preparedAt).toBeLessThan(asked);

    const requirement = await createRequirement({ api: api() }, { title: 'Use the pool' });
    const report = path.join(sandbox.shared, 'pooled.json');
    await startRun(
      { api: api() },
      requirement.id,
      `report:${report} ${sh('echo hello > hello.txt && git add hello.txt && git commit -qm "Say hello"')}`,
    );
    const { requirement: done } = await settled({ api: api() }, requirement.id, 1);
    const branch = done.worktree!.branch!;
    // The prepared copy, in its own folder, on the Requirement's new branch.
    expect(done.worktree).toMatchObject({ baseRef: 'main', mode: 'worktree', path: prepared.path });
    expect(readReport(report)).toMatchObject({
      cwd: prepared.path,
      env: { AGENT_MANAGER_BRANCH: branch, AGENT_MANAGER_WORKTREE: prepared.path },
    });
    expect(git(prepared.path, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(branch);
    // Setup ran once, when the copy was prepared, not at the start.
    expect(fs.readFileSync(path.join(prepared.path, '.setup-count'), 'utf8')).toBe('once\n');
    expect(Number(fs.readFileSync(path.join(prepared.path, '.prepared-at'), 'utf8'))).toBe(preparedAt);
    expect(fs.readFileSync(path.join(prepared.path, 'deps', 'installed.txt'), 'utf8')).toBe('dependency\n');
    const [run] = await runsOf({ api: api() }, requirement.id);
    const trace = (await ok(api().GET('/api/runs/{id}/trace', { params: { path: { id: run.id } } }))).items;
    expect(trace.find((item) => item.title.startsWith('Took the prepared worktree'))?.title).toBe(
      `Took the prepared worktree ${prepared.path} on ${branch} (a repository of the agent's own)`,
    );
    expect(trace.some((item) => item.title.startsWith('Worktree setup'))).toBe(false);
    // The agent's commit reached the person's repository on the Requirement's branch.
    expect(git(sandbox.workspace, 'show', `${branch}:hello.txt`)).toBe('hello\n');
    expect(git(sandbox.workspace, 'log', '-1', '--format=%s', branch).trim()).toBe('Say hello');

    // The pool fills again behind it, in a folder of its own.
    const refilled = (await readyAt(head())).copies[0];
    expect(refilled.path).not.toBe(prepared.path);
  });

  it('makes a copy of its own for a Requirement on another base, and leaves the pool as it is', async () => {
    const before = (await readyAt(head())).copies[0];
    const requirement = await createRequirement({ api: api() }, { baseRef: 'other', title: 'Another base' });
    await startRun({ api: api() }, requirement.id, 'go');
    const { requirement: done } = await settled({ api: api() }, requirement.id, 1);
    expect(path.basename(done.worktree!.path!)).not.toMatch(/^pool-/);
    expect(done.worktree!.path).not.toBe(before.path);
    const [run] = await runsOf({ api: api() }, requirement.id);
    const trace = (await ok(api().GET('/api/runs/{id}/trace', { params: { path: { id: run.id } } }))).items;
    expect(trace.some((item) => item.title.startsWith('Worktree setup: .agent-manager/setup'))).toBe(true);
    expect((await pool()).copies.map((copy) => copy.path)).toEqual([before.path]);
  });

  it('prepares again when the base moves, and says why a copy could not be made', async () => {
    const stale = (await readyAt(head())).copies[0];
    fs.writeFileSync(path.join(sandbox.workspace, 'moved.txt'), 'the base moved\n');
    git(sandbox.workspace, 'add', 'moved.txt');
    git(sandbox.workspace, 'commit', '-q', '-m', 'Move the base');
    const fresh = (await readyAt(head())).copies[0];
    expect(fresh.path).not.toBe(stale.path);
    expect(fs.existsSync(stale.path)).toBe(false);
    expect(fs.readFileSync(path.join(fresh.path, 'moved.txt'), 'utf8')).toBe('the base moved\n');

    // Another setup command: the copy made with the old one is stale, and the new one fails.
    await patch({ worktreeSetupCommand: 'echo "cannot install"; exit 3' });
    const failed = await until(
      'the failure to be reported',
      async () => {
        const now = await pool();
        return now.lastFailure !== null && now.copies.length === 0 ? now : undefined;
      },
      60_000,
      100,
    );
    expect(failed.lastFailure!.message).toContain('the setup command (echo "cannot install"; exit 3) exited with 3');
    expect(failed.lastFailure!.message).toContain('cannot install');
    expect(fs.existsSync(fresh.path)).toBe(false);
    // A setup that needs what only a Requirement has (its ports, its branch) is not pooled.
    await patch({ worktreeSetupCommand: 'echo "PORT=$AGENT_MANAGER_PORT" > .env' });
    const unpooled = await until(
      'the pool to say why it holds nothing',
      async () => {
        const now = await pool();
        return now.notPooled !== null && now.copies.length === 0 ? now : undefined;
      },
      30_000,
      100,
    );
    expect(unpooled.notPooled).toContain('the setup command uses AGENT_MANAGER_PORT');
    await patch({ worktreeSetupCommand: null });
    expect((await readyAt(head())).notPooled).toBeNull();
  });

  it('keeps ready copies over a restart, clears one a crash left half made, and empties with worktreePool 0 and doctor --clean', async () => {
    const kept = (await readyAt(head())).copies[0];
    await manager.stop();
    // What a kill -9 during a setup leaves: a listed copy still filling, its folder half made.
    const dataDirectory = manager.runtime.paths.dataDirectory;
    const manifest = path.join(dataDirectory, 'worktree-pool.json');
    const listed = JSON.parse(fs.readFileSync(manifest, 'utf8')) as Array<Record<string, unknown>>;
    const half = path.join(path.dirname(kept.path), 'pool-0badc0de');
    fs.mkdirSync(path.join(half, '.git'), { recursive: true });
    fs.writeFileSync(
      manifest,
      JSON.stringify([...listed, { ...listed[0], id: '0badc0de', path: half, setupAt: null, state: 'filling' }]),
    );
    // …and what its setup left running, carrying the copy's marker.
    const marker = `${workspaceMarkerPrefix('pool', sandbox.home, fs.realpathSync(sandbox.workspace))}0badc0de`;
    const leftover = spawn('sleep', ['300'], {
      detached: true,
      env: { ...process.env, [RUN_MARKER_VARIABLE]: marker },
      stdio: 'ignore',
    });
    leftover.unref();
    manager = await startWorktreeManager(sandbox);
    expect((await pool()).copies.map((copy) => copy.path)).toEqual([kept.path]);
    expect(fs.existsSync(half)).toBe(false);
    await until(
      'the leftover setup to be ended',
      async () => !fs.existsSync(`/proc/${leftover.pid}`) || undefined,
      10_000,
    );
    expect(fs.existsSync(kept.path)).toBe(true);

    // doctor --clean refuses while the manager runs: it may be handing a copy out.
    const env = { ...process.env, CODE_FACTORY_HOME: sandbox.home };
    // Awaited without blocking: the manager answering in this process must not stall meanwhile.
    const doctor = () =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [BIN, 'doctor', '--clean', '--workspace', sandbox.workspace],
          { encoding: 'utf8', env, timeout: 60_000 },
          (err, stdout, stderr) => resolve({ status: err === null ? 0 : (err.code as number | null), stderr, stdout }),
        );
      });
    const refused = await doctor();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('stop it first, or set worktreePool to 0');
    expect(fs.existsSync(kept.path)).toBe(true);

    // worktreePool 0 empties it at once; 1 again prepares one.
    await patch({ worktreePool: 0 });
    await until(
      'the pool to be emptied',
      async () => (await pool()).copies.length === 0 && !fs.existsSync(kept.path),
      30_000,
    );
    await patch({ worktreePool: 1 });
    const again = (await readyAt(head())).copies[0];

    await manager.stop();
    const cleaned = await doctor();
    expect(cleaned.stdout).toContain(`Removed 1 prepared worktree:\n  ${again.path}\n`);
    expect(fs.existsSync(again.path)).toBe(false);
    expect(fs.existsSync(manifest)).toBe(false);
    manager = await startWorktreeManager(sandbox);
  });
});
