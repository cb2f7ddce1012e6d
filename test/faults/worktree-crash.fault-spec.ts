import * as fs from 'node:fs';
import * as path from 'node:path';

import {
  AgentReport,
  createRequirement,
  git,
  initRepository,
  readReport,
  settled,
  startRun,
  WORKTREE_AGENT,
  writeFiles,
} from '../support/git-repo';
import { Json } from '../support/http';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { until } from '../support/wait';
import { ok } from '../support/api';
import { checkInvariants } from './invariants';

// Issue 20: kill -9 while a Requirement's worktree is being made, at the two places where the
// creation waits on something outside the manager (git inside `git worktree add`, and the
// person's setup command). The manager is killed at a known point of each, never after a sleep:
// a filter or setup that hangs while a flag file exists writes its PID first. After the restart: the run
// that was starting failed and consumed nothing, the person's message is there once and is
// delivered once by the next run, that run gets a whole worktree (set up once more, to the end),
// and nothing is left that no Requirement owns.

jest.setTimeout(5 * 60_000);

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};

/**
 * A shell snippet that, while `flag` exists, writes `mark` and hangs in a process that carries
 * `HANG_MARK=<mark>` in its environment: found from here by that, since inside the sandbox's PID
 * namespace `$$` is not a PID of this machine.
 */
const hangWhile = (flag: string, mark: string) =>
  `if [ -f '${flag}' ]; then echo hanging > '${mark}'; exec env HANG_MARK='${mark}' sleep 600; fi`;

/** The processes of this machine whose environment holds `HANG_MARK=<mark>`. */
function hanging(mark: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HANG_MARK=${mark}`);
      } catch {
        return false;
      }
    });
}

describe('kill -9 while a worktree is being created, then restart', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess | undefined;
  let base: string;

  beforeAll(() => {
    sandbox = makeSandbox();
    base = sandbox.shared;
    initRepository(sandbox.workspace);
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  /** Starts a run, waits for the filter or setup to hang, kills the manager (-9) and then it. */
  async function crashDuring(requirementId: string, message: string, flag: string, mark: string): Promise<void> {
    fs.writeFileSync(flag, '');
    await startRun(manager!, requirementId, message);
    const pids = await until('the filter or setup to hang', async () => {
      const found = fs.existsSync(mark) ? hanging(mark) : [];
      return found.length > 0 ? found : undefined;
    });
    await manager!.kill9();
    for (const pid of pids) {
      process.kill(pid, 'SIGKILL');
    }
    fs.rmSync(flag);
    fs.rmSync(mark);
  }

  /** After the restart: the crashed run is failed, a new start succeeds; its Requirement and the agent's report. */
  async function retried(requirementId: string, report: string): Promise<{ done: Json; place: AgentReport }> {
    const lost = await settled(manager!, requirementId, 1);
    expect(lost.run.status).toBe('failed');
    await startRun(manager!, requirementId, '');
    const { requirement: done, run } = await settled(manager!, requirementId, 2);
    expect(run.status).toBe('succeeded');
    const place = readReport(report);
    expect(place.cwd).toBe(done.worktree!.path);
    return { done, place };
  }

  /** The person's message: once in the conversation, not consumed by the failed run, then by the next. */
  async function expectDeliveredOnce(requirementId: string, message: string): Promise<void> {
    const messages = (
      await ok(
        manager!.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: requirementId }, query: { limit: 200 } },
        }),
      )
    ).items;
    expect(messages.filter((m) => m.body === message)).toHaveLength(1);
    const runs = (await ok(manager!.api.GET('/api/runs', { params: { query: { requirementId, limit: 100 } } }))).items;
    const rd = runs.filter((r) => r.role === 'rd');
    expect(rd.map((r) => r.status).sort()).toEqual(['failed', 'succeeded']);
    const done = rd.find((r) => r.status === 'succeeded')!;
    expect(done).toMatchObject({ inputFromSequence: 1 });
    const requirement = await ok(
      manager!.api.GET('/api/requirements/{id}', { params: { path: { id: requirementId } } }),
    );
    expect(requirement.session.lastConsumedMessageSequence).toBe(done.inputToSequence);
  }

  it("during the making of the agent's repository (its checkout): recovers, and sweeps worktrees no Requirement owns at start", async () => {
    const flag = path.join(base, 'hang-checkout');
    const mark = path.join(base, 'hook-pid');
    // git runs a smudge filter inside the checkout: one from the person's own configuration
    // (here the manager's environment), since the manager neutralises the repository's own
    // filters and hooks (issue 25).
    const filter = path.join(base, 'hang-filter.sh');
    fs.writeFileSync(filter, `#!/bin/sh\n${hangWhile(flag, mark)}\nexec cat\n`, { mode: 0o755 });
    writeFiles(sandbox.workspace, {
      '.gitattributes': 'hang.txt filter=hang\n',
      'hang.txt': 'checked out through the filter\n',
    });
    git(sandbox.workspace, 'add', '.gitattributes', 'hang.txt');
    git(sandbox.workspace, 'commit', '-q', '-m', 'a file checked out through a filter');
    const filterEnv = { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'filter.hang.smudge', GIT_CONFIG_VALUE_0: filter };
    manager = await startManager({ env: { ...AGENTS, ...filterEnv }, sandbox });
    const requirement = await createRequirement(manager, { title: 'Crash while creating' });
    const message = `report:${path.join(base, 'crash.json')}`;
    await crashDuring(requirement.id, message, flag, mark);
    const worktrees = path.join(sandbox.home, 'worktrees');
    // Left by nobody: a plain directory and a registered worktree no row knows.
    const key = fs.readdirSync(worktrees)[0];
    const strayDir = path.join(worktrees, key, 'deadbeef');
    const strayTree = path.join(worktrees, key, 'cafebabe');
    fs.mkdirSync(strayDir);
    fs.writeFileSync(path.join(strayDir, 'file'), 'x');
    git(sandbox.workspace, 'worktree', 'add', '-q', '--detach', strayTree);

    manager = await startManager({ env: { ...AGENTS, ...filterEnv }, sandbox });
    await until('the sweep', async () => (!fs.existsSync(strayDir) && !fs.existsSync(strayTree)) || undefined);
    expect(git(sandbox.workspace, 'worktree', 'list')).not.toContain(strayTree);
    // The agent acted on the message the crashed start carried: it reached the agent.
    const { done, place } = await retried(requirement.id, path.join(base, 'crash.json'));
    expect(git(place.cwd, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(done.worktree.branch);
    // A repository of the agent's own (issue 44), made whole after the crash: nothing of it in the
    // person's worktree list, nothing left locked.
    expect(fs.statSync(path.join(place.cwd, '.git')).isDirectory()).toBe(true);
    const listed = git(sandbox.workspace, 'worktree', 'list', '--porcelain');
    expect(listed).not.toContain(place.cwd);
    expect(listed).not.toContain('locked');
    expect(git(place.cwd, 'status', '--porcelain')).toBe('');
    expect(git(sandbox.workspace, 'branch', '--list', 'agent/*').trim().split('\n')).toHaveLength(1);
    await expectDeliveredOnce(requirement.id, message);
    expect(await checkInvariants(manager.dataDirectory())).toEqual([]);
  });

  it('during the setup command: the next run sets the worktree up again, to the end, before its agent starts', async () => {
    const flag = path.join(base, 'hang-setup');
    const mark = path.join(base, 'setup-pid');
    const count = path.join(base, 'setups');
    manager ??= await startManager({ env: AGENTS, sandbox });
    // Each setup that runs to its end appends a line; the crashed one never gets there.
    const setup = `${hangWhile(flag, mark)}; echo done >> '${count}'; echo ok > .setup-done`;
    expect((await manager.api.PATCH('/api/configuration', { body: { worktreeSetupCommand: setup } })).status).toBe(200);
    const requirement = await createRequirement(manager, { title: 'Crash while setting up' });
    const message = `report:${path.join(base, 'setup.json')}`;
    await crashDuring(requirement.id, message, flag, mark);
    expect(fs.existsSync(count)).toBe(false);

    manager = await startManager({ env: AGENTS, sandbox });
    const { place } = await retried(requirement.id, path.join(base, 'setup.json'));
    expect(fs.readFileSync(path.join(place.cwd, '.setup-done'), 'utf8')).toBe('ok\n');
    expect(fs.readFileSync(count, 'utf8')).toBe('done\n');
    expect(fs.statSync(path.join(place.cwd, '.git')).isDirectory()).toBe(true);
    await expectDeliveredOnce(requirement.id, message);
    expect(await checkInvariants(manager.dataDirectory())).toEqual([]);
  });
});
