import * as fs from 'node:fs';
import * as path from 'node:path';

import {
  checkoutSnapshot,
  createRequirement,
  git,
  initRepository,
  settled,
  startRun,
  writeFiles,
} from './support/git-repo';
import type { ManagerProcess, Sandbox } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { useRealAgentWorld } from './support/real-agent-world';

// Issue 14's first measurement, now a test: two Requirements started together, each told by the
// model to write shared.txt and commit. With the real Codex and Claude Code CLIs, each commit lands
// on its own branch in its own worktree, and the person's checkout (their branch, HEAD, index,
// staged, unstaged and untracked work) is byte for byte what it was. The instructions the CLI
// sent to the model (as the stub recorded them) name that worktree, its branch and its base, or
// say that a Requirement without a worktree runs in place.

jest.setTimeout(180_000);

describe.each(REAL_AGENT_CLIS)('two Requirements at once with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'worktrees', (world) => ({ manager, sandbox, stub } = world));
  /** Every request body the CLI sent the model for this Requirement (its ID is in the instructions), as JSON text. */
  const sentFor = (requirementId: string): string =>
    stub.requests
      .map((request) => JSON.stringify(request.body))
      .filter((body) => body.includes(requirementId))
      .join('\n');

  it('tells the agent of a Requirement without a worktree (no git repository yet) that it runs in place', async () => {
    const requirement = await createRequirement(manager, { provider, title: 'No repository here' });
    expect(requirement.isolation).toBe('in_place');
    stub.scriptFor(requirement.id, [{ text: 'Nothing to commit.' }]);
    await startRun(manager, requirement.id, `Look around (${requirement.id})`);
    const { run } = await settled(manager, requirement.id, 1);
    expect(run.status).toBe('succeeded');
    const sent = sentFor(requirement.id);
    expect(sent).toContain('This Requirement runs in place (`in_place`, no worktree)');
    expect(sent).toContain(`\`${fs.realpathSync(sandbox.workspace)}\` is not a git repository with a commit`);
    expect(sent).not.toContain('git worktree for this Requirement');
    expect(sent).not.toContain('create or reuse a branch or git worktree');
  });

  it("commits each on its own branch in its own worktree, leaving the person's checkout byte for byte unchanged", async () => {
    // Isolation is decided when a Requirement is created: the workspace becomes a repository now.
    initRepository(sandbox.workspace, { 'shared.txt': 'base\n', 'src/a.txt': 'a\n' });
    git(sandbox.workspace, 'checkout', '-q', '-b', 'person/work');
    writeFiles(sandbox.workspace, { 'src/a.txt': 'staged\n' });
    git(sandbox.workspace, 'add', 'src/a.txt');
    writeFiles(sandbox.workspace, { 'scratch.txt': 'untracked notes\n', 'src/a.txt': 'unstaged\n' });
    const before = checkoutSnapshot(sandbox.workspace);

    const requirements = [
      await createRequirement(manager, { provider, title: 'Write A' }),
      await createRequirement(manager, { provider, title: 'Write B' }),
    ];
    const names = ['A', 'B'];
    requirements.forEach((requirement, i) => {
      const name = names[i];
      stub.scriptFor(requirement.id, [
        { shell: `echo ${name} > shared.txt && git add shared.txt && git commit -q -m "${name}: shared"` },
        { text: `${name} committed.` },
      ]);
    });
    await Promise.all(requirements.map((r) => startRun(manager, r.id, `Write shared.txt and commit (${r.id})`)));
    const done = await Promise.all(requirements.map((r) => settled(manager, r.id, 1)));

    const branches = done.map(({ requirement }) => requirement.worktree!.branch as string);
    expect(new Set(branches).size).toBe(2);
    done.forEach(({ requirement, run }, i) => {
      const name = names[i];
      const other = names[1 - i];
      expect(run.status).toBe('succeeded');
      expect(requirement.worktree).toMatchObject({
        ahead: 1,
        baseRef: 'person/work',
        behind: 0,
        dirty: false,
        mode: 'worktree',
      });
      expect(path.dirname(requirement.worktree!.path!)).toContain(path.join(sandbox.home, 'worktrees'));
      const branch = branches[i];
      expect(git(sandbox.workspace, 'show', `${branch}:shared.txt`)).toBe(`${name}\n`);
      expect(git(sandbox.workspace, 'log', '--format=%s', branch).trim().split('\n')).toEqual([
        `${name}: shared`,
        'initial',
      ]);
      expect(git(sandbox.workspace, 'log', '--format=%s', branch)).not.toContain(`${other}: shared`);
      expect(git(requirement.worktree!.path!, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(branch);
      expect(git(requirement.worktree!.path!, 'rev-parse', 'HEAD').trim()).toBe(requirement.worktree!.headSha);
    });
    // What each agent was told: its worktree, branch and base, and to make no other.
    done.forEach(({ requirement }) => {
      const sent = sentFor(requirement.id);
      expect(sent).toContain(
        `Agent Manager made a git worktree for this Requirement: \`${requirement.worktree!.path}\`, on branch \`${requirement.worktree!.branch}\`, created from \`person/work\` (own repository).`,
      );
      expect(sent).toContain(`Make your changes and commits there, on \`${requirement.worktree!.branch}\``);
      expect(sent).toContain('Do not create another branch or worktree');
      expect(sent).not.toContain('create or reuse a branch or git worktree');
    });
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(before);
    expect(git(sandbox.workspace, 'log', '--format=%s', 'person/work').trim()).toBe('initial');
  });
});
