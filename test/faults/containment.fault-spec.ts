import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from '../support/api';
import { createRequirement, git, initRepository, runsOf, settled } from '../support/git-repo';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from '../support/model-stub';
import { useRealAgentWorld } from '../support/real-agent-world';
import { until } from '../support/wait';

// Issue 25: one prompt-injected agent, from its own tool shell (the real Codex and Claude Code CLIs
// scripted by the model stub), must not reach the owner (through git programs the manager runs, or
// the setup command's environment), the person (their checkout, their shell configuration), or
// another agent (its worktree, its credential, the shared launcher).

jest.setTimeout(240_000);

const ATTACK = path.join(ROOT, 'test', 'fixtures', 'agents', 'containment-attack.js');
const SECRET = 'whsec-containment-do-not-leak';

interface AttackResult {
  commonDir: string | null;
  committed: true | string | null;
  credentialsSeen: string[];
  planted: Record<string, true | string>;
  seen: Record<string, boolean>;
  wrote: Record<string, true | string>;
  crashed?: string;
}

const attackCommand = (job: Record<string, unknown>) =>
  `${process.execPath} ${ATTACK} ${Buffer.from(JSON.stringify(job)).toString('base64')}`;

/**
 * A program that records that it ran (and whether the owner's data and the manager's settings
 * were within its reach) in `witness`; planted where git would run it.
 */
function writeEvil(base: string, home: string): { evil: string; witness: string } {
  const witness = path.join(base, 'evil-ran');
  const evil = path.join(base, 'evil.sh');
  fs.writeFileSync(
    evil,
    [
      '#!/bin/sh',
      // One line per run: its arguments | entries of the data directories it sees | manager settings it holds.
      `seen=$(ls -A '${path.join(home, 'workspaces')}' 2>/dev/null | wc -l)`,
      `held=$(env | grep -c -e '^CODE_FACTORY_HOME=' -e '${SECRET}')`,
      `echo "$1|$seen|$held" >> '${witness}'`,
      // textconv prints the file; fsmonitor and hooks need say nothing
      'test -f "$1" && cat "$1"',
      'exit 0',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return { evil, witness };
}

/** Every process whose environment carries the run's marker (AGENT_MANAGER_RUN_MARKER). */
function processesOf(marker: string): number[] {
  const entry = `AGENT_MANAGER_RUN_MARKER=${marker}`;
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return (
          fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry) &&
          !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
        );
      } catch {
        return false;
      }
    });
}

/** The repository every suite here works in: a setup command that records its environment and what it can see. */
function prepareRepository(sandbox: Sandbox, setup: string): void {
  initRepository(sandbox.workspace, { '.agent-manager/setup': setup, 'README.md': '# repo\n' });
}

describe.each(REAL_AGENT_CLIS)('containment of the real $provider CLI', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let agentHome: string;
  const base = () => sandbox.shared;
  useRealAgentWorld(
    cli,
    'contain',
    (world) => {
      ({ manager, sandbox, stub } = world);
      agentHome = world.agentEnv.HOME;
    },
    {
      env: { CODE_FACTORY_GITHUB_WEBHOOK_SECRET: SECRET },
      prepare: (sb) => {
        const outDir = path.join(sb.shared, 'setup-out');
        fs.mkdirSync(outDir);
        prepareRepository(
          sb,
          [
            '#!/bin/sh',
            `out='${outDir}'/"$(basename "$PWD")"`,
            'env > "$out.env"',
            `ls -A '${path.join(sb.home, 'workspaces')}' > "$out.ls" 2>&1`,
            `(echo planted >> '${path.join(sb.workspace, 'README.md')}') 2>/dev/null && echo wrote-checkout >> "$out.ls"`,
            'exit 0',
            '',
          ].join('\n'),
        );
      },
    },
  );

  it('an agent writes its own worktree only, sees no other run, and the launcher keeps working for the others', async () => {
    fs.writeFileSync(path.join(agentHome, '.bashrc'), '# the person\n');
    // A logged-in Claude Code keeps ~/.claude.json beside the read-only rest of HOME: it stays
    // writable (bound on its own) and whole.
    fs.writeFileSync(path.join(agentHome, '.claude.json'), JSON.stringify({ numStartups: 1 }));
    const victim = await createRequirement(manager, { provider, title: 'Victim' });
    stub.scriptFor(victim.id, [{ shell: 'sleep 12' }, { text: 'Victim done.' }]);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: victim.id } },
          body: { message: `Work ${victim.id}` },
        })
      ).status,
    ).toBe(202);
    // The victim's CLI is running (it asked the model) while the attacker looks around.
    await until('the victim to ask the model', async () => stub.requests.some((r) => r.marker === victim.id), 60_000);
    const victimRun = (await runsOf(manager, victim.id))[0];
    const victimRequirement = await ok(
      manager.api.GET('/api/requirements/{id}', { params: { path: { id: victim.id } } }),
    );
    const victimTree = victimRequirement.worktree!.path!;
    const launcher = path.join(sandbox.home, 'bin', path.basename(manager.dataDirectory()), 'code-factory-cli');
    const launcherBefore = fs.readFileSync(launcher, 'utf8');
    const { evil, witness } = writeEvil(base(), sandbox.home);

    const attacker = await createRequirement(manager, { provider, title: 'Attacker' });
    const out = path.join(base(), `attack-${provider}.json`);
    const job = {
      commit: true,
      evil,
      out,
      visible: { otherTmp: path.join(sandbox.home, 'tmp', victimRun.id), otherWorktree: victimTree },
      writes: {
        bashrc: path.join(agentHome, '.bashrc'),
        checkout: path.join(sandbox.workspace, 'README.md'),
        launcher,
        otherWorktree: path.join(victimTree, 'README.md'),
        profile: path.join(agentHome, '.profile'),
      },
    };
    stub.scriptFor(attacker.id, [{ shell: attackCommand(job) }, { text: 'Attack over.' }]);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: attacker.id } },
          body: { message: `Attack ${attacker.id}` },
        })
      ).status,
    ).toBe(202);
    const { run } = await settled(manager, attacker.id, 1);
    expect(run.status).toBe('succeeded');
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as AttackResult;
    expect(result.crashed).toBeUndefined();
    // Its own work: committed on its branch.
    expect(result.committed).toBe(true);
    // Nothing of anybody else: every write refused, the other run invisible.
    expect(Object.entries(result.wrote).filter(([, outcome]) => outcome === true)).toEqual([]);
    expect(result.seen).toEqual({ otherTmp: false, otherWorktree: false });
    // Its repository is its own (issue 44): what it plants there stays there, and nothing of it runs
    // when the manager imports its work and shows its changes.
    const attacked = (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: attacker.id } } })))
      .worktree!;
    expect(result.commonDir).toBe(path.join(attacked.path!, '.git'));
    expect(Object.values(result.planted)).toEqual([true, true, true, true]);
    expect(
      (await ok(manager.api.GET('/api/requirements/{id}/changes', { params: { path: { id: attacker.id } } }))).files
        .map((f) => f.path)
        .sort(),
    ).toEqual(['.gitattributes', 'agent-work.txt']);
    expect(
      (
        await manager.api.GET('/api/requirements/{id}/changes/diff', {
          params: { path: { id: attacker.id }, query: { path: 'agent-work.txt' } },
          parseAs: 'text',
        })
      ).data,
    ).toContain('+work');
    // What it planted ran only for its own git, in its sandbox: nothing of the data directories in
    // sight, no secret of the manager's held (`<argument>|<entries seen>|<secrets held>` per run).
    const ran = fs.existsSync(witness) ? fs.readFileSync(witness, 'utf8').trim().split('\n') : [];
    expect(ran.filter((line) => !line.endsWith('|0|0'))).toEqual([]);
    expect(result.credentialsSeen).toEqual([]);
    expect(fs.readFileSync(path.join(agentHome, '.bashrc'), 'utf8')).toBe('# the person\n');
    expect(fs.existsSync(path.join(agentHome, '.profile'))).toBe(false);
    expect(fs.readFileSync(launcher, 'utf8')).toBe(launcherBefore);
    expect(() => JSON.parse(fs.readFileSync(path.join(agentHome, '.claude.json'), 'utf8')) as unknown).not.toThrow();
    expect(git(sandbox.workspace, 'status', '--porcelain')).toBe('');
    expect(fs.existsSync(path.join(sandbox.workspace, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(git(sandbox.workspace, 'config', '--list', '--local')).not.toContain(evil);

    // The victim finishes, and its next run (a new MCP server through the launcher) works too.
    expect((await settled(manager, victim.id, 1)).run.status).toBe('succeeded');
    stub.scriptFor(victim.id, [{ text: 'Second run done.' }]);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/reply', {
          params: { path: { id: victim.id } },
          body: { message: `Again ${victim.id}` },
        })
      ).status,
    ).toBe(202);
    expect((await settled(manager, victim.id, 2)).run.status).toBe('succeeded');

    // The setup commands ran sandboxed, with the agents' environment: no manager secret, no data directory.
    const setups = fs.readdirSync(path.join(base(), 'setup-out'));
    expect(setups.filter((f) => f.endsWith('.env')).length).toBeGreaterThanOrEqual(2);
    for (const file of setups) {
      const text = fs.readFileSync(path.join(base(), 'setup-out', file), 'utf8');
      if (file.endsWith('.env')) {
        expect(text).not.toContain(SECRET);
        expect(text).not.toMatch(/^CODE_FACTORY_/m);
        expect(text).toMatch(/^AGENT_MANAGER_RUN_MARKER=run_/m);
      } else {
        expect(text).toBe('');
      }
    }
  });

  it("runs no program that the repository's configuration names when git runs in the manager: hooks, fsmonitor, textconv, filters", async () => {
    const { evil, witness } = writeEvil(base(), sandbox.home);
    // Planted as an agent without a sandbox could: in the shared git directory and configuration.
    const hooks = path.join(sandbox.workspace, '.git', 'hooks');
    for (const hook of ['post-checkout', 'pre-commit', 'post-index-change', 'reference-transaction']) {
      fs.writeFileSync(path.join(hooks, hook), `#!/bin/sh\nexec '${evil}' ${hook}\n`, { mode: 0o755 });
    }
    const planted = [
      ['core.fsmonitor', evil],
      ['diff.evil.textconv', evil],
      ['filter.evil.clean', evil],
      ['filter.evil.smudge', evil],
    ];
    for (const [key, value] of planted) {
      git(sandbox.workspace, 'config', key, value);
    }
    try {
      // A new Requirement's worktree (worktree add: post-checkout, smudge), its run and refresh (status: fsmonitor).
      const requirement = await createRequirement(manager, { provider, title: 'After the plant' });
      const out = path.join(base(), `plant-${provider}.json`);
      stub.scriptFor(requirement.id, [{ shell: attackCommand({ commit: true, out }) }, { text: 'Committed.' }]);
      expect(
        (
          await manager.api.POST('/api/requirements/{id}/start', {
            params: { path: { id: requirement.id } },
            body: { message: `Commit ${requirement.id}` },
          })
        ).status,
      ).toBe(202);
      expect((await settled(manager, requirement.id, 1)).run.status).toBe('succeeded');
      // The person opens the agent's diff: .gitattributes says `diff=evil` (textconv).
      const changes = await manager.api.GET('/api/requirements/{id}/changes', {
        params: { path: { id: requirement.id } },
      });
      expect(changes.status).toBe(200);
      expect((changes.data!.files as Array<{ path: string }>).map((f) => f.path)).toEqual(
        expect.arrayContaining(['agent-work.txt']),
      );
      const diff = await manager.api.GET('/api/requirements/{id}/changes/diff', {
        params: { path: { id: requirement.id }, query: { path: 'agent-work.txt' } },
      });
      expect(diff.status).toBe(200);
      // Uncommitted work saved as a patch on cancel (add: clean filter; diff).
      const worktree = (
        await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))
      ).worktree!.path!;
      fs.writeFileSync(path.join(worktree, 'pending.txt'), 'pending\n');
      fs.writeFileSync(path.join(worktree, '.gitattributes'), '* filter=evil diff=evil\n');
      expect(
        (await manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: requirement.id } } })).status,
      ).toBeLessThan(300);
      await until('the worktree to be removed', async () => !fs.existsSync(worktree), 60_000);
      // What ran, ran in the agent's own sandbox (its own git commit): no data directory, no
      // manager setting. Nothing ran where the manager's own git runs.
      const lines = () => (fs.existsSync(witness) ? fs.readFileSync(witness, 'utf8').trim().split('\n') : []);
      expect(lines().filter((line) => !/\|0\|0$/.test(line))).toEqual([]);
      // The same repository does run them for plain git, here in reach of the data (the test could fail).
      git(sandbox.workspace, 'status');
      expect(lines().filter((line) => !/\|0\|0$/.test(line)).length).toBeGreaterThan(0);
    } finally {
      for (const [key] of planted) {
        git(sandbox.workspace, 'config', '--unset', key);
      }
      for (const hook of fs.readdirSync(hooks).filter((name) => !name.endsWith('.sample'))) {
        fs.rmSync(path.join(hooks, hook));
      }
    }
  });
});

describe('the setup command: stoppable, and ended by stop, cancel, shutdown and the startup sweep', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;

  beforeAll(async () => {
    sandbox = makeSandbox();
    prepareRepository(sandbox, '#!/bin/sh\necho setting up\nsleep 300 &\nsleep 300\n');
    manager = await startManager({ sandbox });
  });
  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  async function inSetup(title: string): Promise<{ id: string; runId: string }> {
    const requirement = await createRequirement(manager, { title });
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: requirement.id } },
          body: { message: 'go' },
        })
      ).status,
    ).toBe(202);
    const run = await until('the run to open', async () => (await runsOf(manager, requirement.id))[0]);
    await until('the setup command to run', async () => processesOf(run.id).length >= 2, 30_000);
    return { id: requirement.id, runId: run.id };
  }

  it('a stop answers at once, ends the setup command and leaves the run cancelled', async () => {
    const { id, runId } = await inSetup('Stopped in setup');
    const asked = Date.now();
    const res = await manager.api.POST('/api/requirements/{id}/interrupt', {
      params: { path: { id } },
      body: { mode: 'stop' },
    });
    expect(res.status).toBe(202);
    expect(Date.now() - asked).toBeLessThan(5_000);
    const run = await until(
      'the run to end',
      async () => (await runsOf(manager, id)).find((r) => r.status !== 'running'),
      15_000,
    );
    expect(run.status).toBe('cancelled');
    expect(processesOf(runId)).toEqual([]);
  });

  it('a cancel ends the setup command, answers promptly and leaves nothing running', async () => {
    const { id, runId } = await inSetup('Cancelled in setup');
    const asked = Date.now();
    const res = await manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id } } });
    expect(res.status).toBeLessThan(300);
    expect(Date.now() - asked).toBeLessThan(15_000);
    const run = await until(
      'the run to end',
      async () => (await runsOf(manager, id)).find((r) => r.status !== 'running'),
      15_000,
    );
    expect(run.status).toBe('cancelled');
    expect((await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).status).toBe(
      'cancelled',
    );
    expect(processesOf(runId)).toEqual([]);
  });

  it('a graceful stop of the manager ends a setup command in flight', async () => {
    const { runId } = await inSetup('Shut down in setup');
    expect(await manager.stop()).toBe(0);
    expect(processesOf(runId)).toEqual([]);
    manager = await startManager({ sandbox });
  });

  it('after kill -9 the next start ends the orphaned setup command (its marker was recorded when the run opened)', async () => {
    const { id, runId } = await inSetup('Crashed in setup');
    await manager.kill9();
    expect(processesOf(runId).length).toBeGreaterThan(0);
    manager = await startManager({ sandbox });
    await until('the orphaned setup to be ended', async () => processesOf(runId).length === 0, 20_000);
    const run = (await runsOf(manager, id)).find((r) => r.id === runId);
    expect(run?.status).toBe('failed');
  });
});
