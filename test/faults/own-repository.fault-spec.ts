import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

import { proposeOverHttp } from '../support/agent-shell';
import { ok } from '../support/api';
import { checkoutSnapshot, createRequirement, git, initRepository, settled } from '../support/git-repo';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from '../support/model-stub';
import { useRealAgentWorld } from '../support/real-agent-world';
import { expectRefused } from '../support/refusals';
import { until } from '../support/wait';

// Issue 44: each agent works in a repository of its own, and the person's repository is written
// only by the manager. Every attack of the issue, from the agent's own shell (the real Codex and
// Claude Code CLIs scripted by the model stub), on a real repository: the person's refs, objects,
// stash, reflogs and configuration are out of its reach; what its own repository holds (replace
// refs, an overwritten object, a FIFO) never reaches the person, and what lands is what Changes
// showed; a swept working copy lands only its recorded head; a git that hangs is a 503, never "in
// place"; and inside its own repository the agent can do everything git allows.

jest.setTimeout(8 * 60_000);

const ATTACK = path.join(ROOT, 'test', 'fixtures', 'agents', 'repository-attack.js');
const attackCommand = (job: Record<string, unknown>) =>
  `${process.execPath} ${ATTACK} ${Buffer.from(JSON.stringify(job)).toString('base64')}`;

interface AttackResult {
  own: Record<string, true | string>;
  person: Record<string, true | string>;
  crashed?: string;
}

/** Everything of the person's repository an agent could have changed: refs, reflogs, stash, config, replace refs, commondir. */
function repositoryState(workspace: string): Record<string, string> {
  const gitDir = path.join(workspace, '.git');
  const logs: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(file);
      } else {
        logs[path.relative(gitDir, file)] = fs.readFileSync(file, 'utf8');
      }
    }
  };
  walk(path.join(gitDir, 'logs'));
  // The Requirements' branches are the manager's to write (it imports into them), and so are its
  // checkpoints' private refs (issue 46 §5): everything else is the person's.
  const own = (name: string) =>
    !name.includes('refs/heads/agent/') && !name.includes('refs/agent-manager/checkpoints/');
  return {
    commondir: String(fs.existsSync(path.join(gitDir, 'commondir'))),
    config: fs.readFileSync(path.join(gitDir, 'config'), 'utf8'),
    logs: JSON.stringify(Object.fromEntries(Object.entries(logs).filter(([name]) => own(name)))),
    refs: git(workspace, 'for-each-ref', '--format=%(objectname) %(refname)').split('\n').filter(own).join('\n'),
    stash: git(workspace, 'stash', 'list'),
  };
}

describe.each(REAL_AGENT_CLIS)('an agent in a repository of its own: the real $provider CLI', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  const base = () => sandbox.shared;
  useRealAgentWorld(cli, 'own-repo', (world) => ({ manager, sandbox, stub } = world), {
    prepare: (sb) => {
      initRepository(sb.workspace, { 'README.md': '# repo\n', 'build.sh': 'echo base\n' });
      // The person's own stash and a tag: an agent must not drop or move them.
      fs.writeFileSync(path.join(sb.workspace, 'README.md'), '# work in progress\n');
      git(sb.workspace, 'stash', '-q');
      git(sb.workspace, 'tag', 'v1');
    },
  });

  const run = async (title: string, turns: Parameters<ModelStub['scriptFor']>[1], count = 1, existing?: string) => {
    const requirement = existing ? { id: existing } : await createRequirement(manager, { provider, title });
    stub.scriptFor(requirement.id, turns);
    const start = count === 1 ? '/api/requirements/{id}/start' : '/api/requirements/{id}/reply';
    expect(
      (
        await manager.api.POST(start, {
          body: { message: `Work ${requirement.id}` },
          params: { path: { id: requirement.id } },
        })
      ).status,
    ).toBe(202);
    return settled(manager, requirement.id, count);
  };

  it("reaches nothing of the person's repository, does everything git allows in its own, and a child it starts gets a repository of its own", async () => {
    const victim = (await run('Victim', [{ text: 'Victim done.' }])).requirement;
    const before = repositoryState(sandbox.workspace);
    const checkout = checkoutSnapshot(sandbox.workspace);
    const out = path.join(base(), `attack-${provider}.json`);
    const attacker = await createRequirement(manager, { provider, title: 'Attacker' });
    const childTag = `${attacker.id}-child`;
    stub.scriptFor(childTag, [{ text: 'Child done.' }]);
    const { requirement: attacked, run: attackRun } = await run(
      'Attacker',
      [
        {
          shell: attackCommand({
            out,
            personGit: path.join(sandbox.workspace, '.git'),
            victimBranch: victim.worktree!.branch,
          }),
        },
        // With the person's refs out of reach, the child is made where every worktree Requirement is.
        { shell: `code-factory-cli requirement propose --title "Child" --description "Child ${childTag}" --start` },
        { text: 'Attack over.' },
      ],
      1,
      attacker.id,
    );
    expect(attackRun.status).toBe('succeeded');
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as AttackResult;
    expect(result.crashed).toBeUndefined();
    expect(Object.entries(result.person).filter(([, outcome]) => outcome === true)).toEqual([]);
    expect(result.own).toEqual({
      cherryPick: true,
      clean: '',
      commit: true,
      gc: true,
      onBranch: true,
      rebase: true,
      stash: true,
      stashPop: true,
      tag: true,
      tagDelete: true,
    });
    // The person's repository is as it was, object for object.
    expect(repositoryState(sandbox.workspace)).toEqual(before);
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(checkout);
    expect(() => git(sandbox.workspace, 'fsck', '--strict', '--no-dangling')).not.toThrow();
    expect(fs.existsSync(path.join(sandbox.workspace, '.git', 'objects', 'info', 'alternates'))).toBe(false);
    // Its own work was imported into its branch, which the person's repository now has.
    expect(attacked.worktree).toMatchObject({ importError: null, layout: 'own_repository', mode: 'worktree' });
    expect(git(sandbox.workspace, 'rev-parse', `refs/heads/${attacked.worktree!.branch}`).trim()).toBe(
      attacked.worktree!.headSha,
    );
    expect(git(sandbox.workspace, 'ls-tree', '--name-only', attacked.worktree!.headSha!)).toContain('two.txt');
    // The child: a worktree Requirement in a repository of its own, never in place.
    const child = await until('the child to exist', async () => {
      const all = (await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items;
      return all.find((r) => r.parentRequirementId === attacker.id);
    });
    const childDone = (await settled(manager, child.id, 1)).requirement;
    expect(childDone).toMatchObject({
      isolation: 'worktree',
      worktree: { layout: 'own_repository', mode: 'worktree' },
    });
    expect(childDone.worktree!.path).not.toBe(sandbox.workspace);
    expect(fs.statSync(path.join(childDone.worktree!.path!, '.git')).isDirectory()).toBe(true);
    // An agent asking to run its proposal in place is refused, with nothing written.
    const count = (await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length;
    const { requirement: asking } = await run('Asks in place', [
      { shell: proposeOverHttp({ description: 'x', isolation: 'in_place', title: 'In place please' }) },
      { text: 'Asked.' },
    ]);
    expect(stub.requests.filter((r) => r.marker === asking.id).pop()!.transcript).toContain('in_place_not_for_agents');
    expect((await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length).toBe(
      count + 1,
    );
  });

  it('lands what Changes showed: replace refs in its repository are ignored, an overwritten object or a FIFO refuses the import, and every other run goes on', async () => {
    // A replace ref: the agent's own git shows the replacement; what is imported, reviewed and landed is the object itself.
    const replaced = await run('Replace', [
      {
        shell:
          "printf 'echo reviewed\\n' > build.sh && git add build.sh && git -c user.name=A -c user.email=a@example.com commit -qm build && " +
          "git replace $(git rev-parse HEAD:build.sh) $(printf 'echo evil\\n' | git hash-object -w --stdin) && git show HEAD:build.sh",
      },
      { text: 'Built.' },
    ]);
    const id = replaced.requirement.id;
    const changes = await ok(manager.api.GET('/api/requirements/{id}/changes', { params: { path: { id } } }));
    const diff = await manager.api.GET('/api/requirements/{id}/changes/diff', {
      params: { path: { id }, query: { path: 'build.sh' } },
      parseAs: 'text',
    });
    expect(diff.data).toContain('+echo reviewed');
    expect(diff.data).not.toContain('evil');
    const landed = await ok(
      manager.api.POST('/api/requirements/{id}/land', {
        body: { expectedHead: changes.workSha, method: 'merge' },
        params: { path: { id } },
      }),
    );
    expect(landed.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(fs.readFileSync(path.join(sandbox.workspace, 'build.sh'), 'utf8')).toBe('echo reviewed\n');
    // A new Requirement's working copy has what landed.
    const next = await run('After the land', [{ shell: 'cat build.sh' }, { text: 'Read it.' }]);
    expect(fs.readFileSync(path.join(next.requirement.worktree!.path!, 'build.sh'), 'utf8')).toBe('echo reviewed\n');

    // An object overwritten after its commit: its content no longer matches its name.
    const corrupt = await run('Corrupt', [
      {
        shell:
          "printf 'echo reviewed2\\n' > two.sh && git add two.sh && git -c user.name=A -c user.email=a@example.com commit -qm corrupted-commit && " +
          'blob=$(git rev-parse HEAD:two.sh) && f=.git/objects/$(echo $blob | cut -c1-2)/$(echo $blob | cut -c3-) && ' +
          "evil=$(printf 'echo evil2\\n' | git hash-object -w --stdin) && chmod u+w $f && cp .git/objects/$(echo $evil | cut -c1-2)/$(echo $evil | cut -c3-) $f && " +
          // The working file changes too, so the snapshot of the working copy (which hashes its files into the
          // person's store while the branch is fetched) never supplies the true content under the blob's name.
          "printf 'echo later\\n' > two.sh && echo done",
      },
      { text: 'Done.' },
    ]);
    expect(corrupt.requirement.worktree!.importError).toMatch(/git refused the agent's branch/);
    expect(git(sandbox.workspace, 'log', '--all', '--format=%s')).not.toContain('corrupted-commit');
    await expectRefused(
      manager.dataDirectory(),
      () =>
        manager.api.POST('/api/requirements/{id}/land', {
          body: { method: 'merge' },
          params: { path: { id: corrupt.requirement.id } },
        }),
      409,
      'import_refused',
    );

    // A FIFO where git would read (its alternates): refused before any git opens it.
    const fifo = await run('Fifo', [
      {
        shell:
          'mv .git/objects/info/alternates .git/objects/info/was-alternates && mkfifo .git/objects/info/alternates && echo planted',
      },
      { text: 'Planted.' },
    ]);
    expect(fifo.requirement.worktree!.importError).toMatch(/a FIFO at \.git\/objects\/info\/alternates/);
    // The person's git, and another agent's run, are unaffected.
    expect(() => git(sandbox.workspace, 'status', '--porcelain')).not.toThrow();
    const other = await run('Unaffected', [{ shell: "printf 'ok\\n' > ok.txt" }, { text: 'Fine.' }]);
    expect(other.run.status).toBe('succeeded');
    expect(other.requirement.worktree).toMatchObject({ dirty: true, importError: null });
  });

  it('lands a swept working copy only at its recorded head, and refuses work that changed since it was shown', async () => {
    const done = await run('Sweep me', [
      {
        shell:
          "printf 'mine\\n' > mine.txt && git add mine.txt && git -c user.name=A -c user.email=a@example.com commit -qm mine",
      },
      { text: 'Mine.' },
    ]);
    const id = done.requirement.id;
    const recorded = done.requirement.worktree!.headSha!;
    const branch = done.requirement.worktree!.branch!;
    expect((await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id } } })).status).toBe(200);
    expect((await manager.api.PATCH('/api/configuration', { body: { worktreeIdleDays: 0 } })).status).toBe(200);
    await until('the idle working copy to go', async () =>
      (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).worktree?.removedAt
        ? true
        : undefined,
    );
    expect((await manager.api.PATCH('/api/configuration', { body: { worktreeIdleDays: 7 } })).status).toBe(200);
    // Its branch moved after the sweep (by anything but an import): only the recorded head lands.
    const elsewhere = git(sandbox.workspace, 'rev-parse', 'v1').trim();
    // The conflict radar notices a branch move on its own and writes what it saw (a system event):
    // each refusal waits for that pass, so its write cannot land inside the refusal's "nothing
    // written". Work at the base itself has nothing to check (no head on its answer).
    const radarSees = (sha: string | null) => {
      const movedAt = new Date().toISOString();
      return until(`the conflict radar to see ${sha} after ${movedAt}`, async () => {
        const { landing } = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
        return landing.headSha === sha && (landing.checkedAt ?? '') >= movedAt ? true : undefined;
      });
    };
    git(sandbox.workspace, 'update-ref', `refs/heads/${branch}`, elsewhere);
    await radarSees(null);
    await expectRefused(
      manager.dataDirectory(),
      () => manager.api.POST('/api/requirements/{id}/land', { body: { method: 'squash' }, params: { path: { id } } }),
      409,
      'head_moved',
    );
    git(sandbox.workspace, 'update-ref', `refs/heads/${branch}`, recorded);
    await radarSees(recorded);
    await expectRefused(
      manager.dataDirectory(),
      () =>
        manager.api.POST('/api/requirements/{id}/land', {
          body: { expectedHead: elsewhere, method: 'squash' },
          params: { path: { id } },
        }),
      409,
      'head_moved',
    );
    const landed = await ok(
      manager.api.POST('/api/requirements/{id}/land', {
        body: { expectedHead: recorded, method: 'squash' },
        params: { path: { id } },
      }),
    );
    expect(git(sandbox.workspace, 'show', `${landed.commit}:mine.txt`)).toBe('mine\n');
  });
  it('fails only the run that hits a limit — a fork of 1,000 sleeps, 3 GB into $TMPDIR — with the reason, while another runs on', async () => {
    expect(
      (await manager.api.PATCH('/api/configuration', { body: { agentProcessLimit: 200, agentTmpSizeMb: 64 } })).status,
    ).toBe(200);
    try {
      const bystander = await createRequirement(manager, { provider, title: 'Bystander' });
      stub.scriptFor(bystander.id, [{ shell: 'sleep 6 && echo still-here > calm.txt' }, { text: 'Calm.' }]);
      expect(
        (
          await manager.api.POST('/api/requirements/{id}/start', {
            body: { message: `Work ${bystander.id}` },
            params: { path: { id: bystander.id } },
          })
        ).status,
      ).toBe(202);
      const forker = await run('Fork bomb', [
        { shell: '(i=0; while [ $i -lt 1000 ]; do sleep 60 & i=$((i+1)); done) 2>/dev/null; sleep 30' },
        { text: 'Forked.' },
      ]);
      expect(forker.run.status).toBe('failed');
      expect(forker.run.error).toMatch(
        /the run hit a limit: it (tried to run more than 200 processes at once \(agentProcessLimit\)|filled its temporary space)/,
      );
      const filler = await run('Disk filler', [
        { shell: 'dd if=/dev/zero of="$TMPDIR/big" bs=1M count=3072; sleep 30' },
        { text: 'Filled.' },
      ]);
      expect(filler.run.status).toBe('failed');
      expect(filler.run.error).toMatch(
        /the run hit a limit: it filled its temporary space \(\/tmp, \/var\/tmp and \$TMPDIR: 64 MB, agentTmpSizeMb\)/,
      );
      // Its temporary space was its own: nothing of it is left on the machine.
      expect(fs.existsSync(path.join(sandbox.home, 'tmp', filler.run.id))).toBe(false);
      const calm = await settled(manager, bystander.id, 1);
      expect(calm.run.status).toBe('succeeded');
      expect(fs.readFileSync(path.join(calm.requirement.worktree!.path!, 'calm.txt'), 'utf8')).toBe('still-here\n');
    } finally {
      expect(
        (await manager.api.PATCH('/api/configuration', { body: { agentProcessLimit: 2048, agentTmpSizeMb: 2048 } }))
          .status,
      ).toBe(200);
    }
  });
});

describe('a git that hangs on the workspace', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace);
    manager = await startManager({ env: { GH_TOKEN: '', GITHUB_TOKEN: '' }, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('is a 503 with the reason, never a Requirement in place', async () => {
    const first = await createRequirement(manager, { title: 'Seen as a repository' });
    expect(first.isolation).toBe('worktree');
    const before = (await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length;
    // A FIFO where git reads the repository's borrowed objects: every git that looks up an object hangs.
    const alternates = path.join(sandbox.workspace, '.git', 'objects', 'info', 'alternates');
    fs.mkdirSync(path.dirname(alternates), { recursive: true });
    execFileSync('mkfifo', [alternates]);
    try {
      const answer = await manager.api.POST('/api/requirements', {
        body: { provider: 'codex', title: 'While git hangs' },
      });
      expect(answer.response.status).toBe(503);
      expect(answer.error).toMatchObject({
        code: 'workspace_git_unavailable',
        message: expect.stringMatching(/took longer than/),
      });
    } finally {
      fs.rmSync(alternates);
    }
    expect((await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length).toBe(
      before,
    );
    // The person choosing in place still can; the repository answering again gives worktrees again.
    expect((await createRequirement(manager, { isolation: 'in_place', title: 'On purpose' })).isolation).toBe(
      'in_place',
    );
    expect((await createRequirement(manager, { title: 'Again' })).isolation).toBe('worktree');
  });
});
