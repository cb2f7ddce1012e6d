import * as path from 'node:path';

import { checkoutSnapshot, createRequirement, git, initRepository, settled, startRun, writeFiles } from './support/git-repo';
import type { ManagerProcess, Sandbox } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { useRealAgentWorld } from './support/real-agent-world';

// Issue 14's first measurement, now a test: two Requirements started together, each told by the
// model to write shared.txt and commit. With the real Codex and Claude Code CLIs, each commit lands
// on its own branch in its own worktree, and the person's checkout (their branch, HEAD, index,
// staged, unstaged and untracked work) is byte for byte what it was.

jest.setTimeout(180_000);

describe.each(REAL_AGENT_CLIS)('two Requirements at once with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'worktrees', (world) => ({ manager, sandbox, stub } = world));

  it("commits each on its own branch in its own worktree, leaving the person's checkout byte for byte unchanged", async () => {
    // Isolation is decided when a Requirement is created: the workspace becomes a repository now.
    initRepository(sandbox.workspace, { 'shared.txt': 'base\n', 'src/a.txt': 'a\n' });
    git(sandbox.workspace, 'checkout', '-q', '-b', 'person/work');
    writeFiles(sandbox.workspace, { 'src/a.txt': 'staged\n' });
    git(sandbox.workspace, 'add', 'src/a.txt');
    writeFiles(sandbox.workspace, { 'scratch.txt': 'untracked notes\n', 'src/a.txt': 'unstaged\n' });
    const before = checkoutSnapshot(sandbox.workspace);

    const requirements = [await createRequirement(manager, { provider, title: 'Write A' }), await createRequirement(manager, { provider, title: 'Write B' })];
    const names = ['A', 'B'];
    requirements.forEach((requirement, i) => {
      const name = names[i];
      stub.scriptFor(requirement.id, [{ shell: `echo ${name} > shared.txt && git add shared.txt && git commit -q -m "${name}: shared"` }, { text: `${name} committed.` }]);
    });
    await Promise.all(requirements.map((r) => startRun(manager, r.id, `Write shared.txt and commit (${r.id})`)));
    const done = await Promise.all(requirements.map((r) => settled(manager, r.id, 1)));

    const branches = done.map(({ requirement }) => requirement.worktree.branch as string);
    expect(new Set(branches).size).toBe(2);
    done.forEach(({ requirement, run }, i) => {
      const name = names[i];
      const other = names[1 - i];
      expect(run.status).toBe('succeeded');
      expect(requirement.worktree).toMatchObject({ ahead: 1, baseRef: 'person/work', behind: 0, dirty: false, mode: 'worktree' });
      expect(path.dirname(requirement.worktree.path)).toContain(path.join(sandbox.home, 'worktrees'));
      const branch = branches[i];
      expect(git(sandbox.workspace, 'show', `${branch}:shared.txt`)).toBe(`${name}\n`);
      expect(git(sandbox.workspace, 'log', '--format=%s', branch).trim().split('\n')).toEqual([`${name}: shared`, 'initial']);
      expect(git(sandbox.workspace, 'log', '--format=%s', branch)).not.toContain(`${other}: shared`);
      expect(git(requirement.worktree.path, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(branch);
      expect(git(requirement.worktree.path, 'rev-parse', 'HEAD').trim()).toBe(requirement.worktree.headSha);
    });
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(before);
    expect(git(sandbox.workspace, 'log', '--format=%s', 'person/work').trim()).toBe('initial');
  });
});
