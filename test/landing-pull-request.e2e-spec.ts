import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from './support/api';
import { snapshotStore } from './support/db-snapshot';
import { FakeGitHubServer } from './support/fake-github-server';
import { createRequirement, git, initRepository, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

// Issue 28 §1, `pull_request`: a real manager on a real repository whose `origin` is a GitHub URL
// (https://github.com/acme/widgets.git) that the repository's own `url.<bare>.insteadOf` sends
// to a local bare repository, the fake GitHub as the API, the synthetic worktree agent making the
// commits. Every git the manager runs goes through a logging `git` first on its PATH, which
// records each push's command line and its GIT_CONFIG_* environment: the token must be in the
// one and never in the other.

jest.setTimeout(120_000);

const TOKEN = 'ghp_landing_token_never_on_a_command_line';
const REPOSITORY = 'acme/widgets';
const REMOTE_URL = 'https://github.com/acme/widgets.git';

describe('landing a Requirement as a pull request', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let github: FakeGitHubServer;
  let bare: string;
  let pushLog: string;
  let env: Record<string, string>;

  const land = (id: string, body: { commitPending?: boolean } = {}) =>
    manager.api.POST('/api/requirements/{id}/land', {
      body: { method: 'pull_request', ...body },
      params: { path: { id } },
    });
  const bareHead = (branch: string): string | null => {
    try {
      return git(bare, 'rev-parse', '--verify', '-q', `refs/heads/${branch}`).trim();
    } catch {
      return null;
    }
  };
  /** The requests that opened (or tried to open) a PR on GitHub. */
  const opens = () => github.requests.filter((r) => r.method === 'POST' && r.path === `/repos/${REPOSITORY}/pulls`);
  const pullRequestsOf = async (requirementId: string) =>
    (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId } } }))).items;
  /**
   * Until the conflict radar has looked at what the last run or land did and published it (its
   * events would otherwise land inside a refusal's "nothing written" check).
   */
  const quiet = async () => {
    let last = '';
    await until(
      'the radar to publish what it found',
      async () => {
        await ok(manager.api.GET('/api/conflicts'));
        const now = JSON.stringify(await snapshotStore(manager.dataDirectory(), { exceptBackground: true }));
        const same = now === last;
        last = now;
        return same || undefined;
      },
      30_000,
      750,
    );
  };
  /** A Requirement whose one run ran `command` in its worktree; with its branch. */
  const worked = async (title: string, command: string, description = '') => {
    const requirement = await createRequirement(manager, { description, title });
    await startRun(manager, requirement.id, sh(command));
    const done = await settled(manager, requirement.id, 1);
    expect(done.run.status).toBe('succeeded');
    await quiet();
    return done.requirement;
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    const outside = path.dirname(sandbox.home);
    initRepository(sandbox.workspace, { 'README.md': '# widgets\n' });
    bare = path.join(outside, 'widgets.git');
    git(outside, 'init', '-q', '--bare', '-b', 'main', bare);
    git(sandbox.workspace, 'push', '-q', bare, 'main:main');
    git(sandbox.workspace, 'remote', 'add', 'origin', REMOTE_URL);
    git(sandbox.workspace, 'config', `url.${bare}.insteadOf`, REMOTE_URL);

    const bin = path.join(outside, 'bin');
    fs.mkdirSync(bin);
    pushLog = path.join(outside, 'push.log');
    const realGit = execFileSync('/bin/sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\nif [ "$1" = "push" ]; then { echo "ARGV $*"; env | grep '^GIT_CONFIG_' | sort; echo END; } >> "$PUSH_LOG"; fi\nexec ${realGit} "$@"\n`,
      { mode: 0o755 },
    );
    // GitHub reads the head of a new PR from its copy of the pushed branch: here, the bare repository.
    github = await FakeGitHubServer.start({ branchHead: (_repository, branch) => bareHead(branch), token: TOKEN });
    env = {
      CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
      CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
      CODE_FACTORY_GITHUB_API_URL: github.url,
      CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '1',
      GH_TOKEN: '',
      GITHUB_TOKEN: TOKEN,
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      PUSH_LOG: pushLog,
    };
    manager = await startManager({ env, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    await github?.close();
    sandbox?.cleanup();
  });

  it('pushes the branch, opens the PR with the Requirement and its conversation, registers it, and the reconciler follows it', async () => {
    const requirement = await worked(
      'Add the flux capacitor',
      'echo flux > flux.txt && git add flux.txt && git commit -qm "Add the flux capacitor" && echo "a draft" > notes.txt',
      'Make the widgets travel in time.\n\nKeep the public API as it is.',
    );
    const branch = requirement.worktree!.branch!;
    const worktree = requirement.worktree!.path!;

    // No remote on GitHub (origin points elsewhere): refused with the command that fixes it, nothing written.
    git(sandbox.workspace, 'remote', 'set-url', 'origin', 'https://gitlab.example.com/acme/widgets.git');
    const noRemote = await expectRefused(
      manager.dataDirectory(),
      () => land(requirement.id),
      409,
      'github_remote_missing',
    );
    expect(noRemote.message).toContain('git remote add origin https://github.com/OWNER/REPO.git');
    // The land menu asks first, and is told the same.
    expect(await ok(manager.api.GET('/api/landing/readiness'))).toEqual({
      available: false,
      missing: 'remote',
      reason: noRemote.message,
      remote: null,
    });
    git(sandbox.workspace, 'remote', 'set-url', 'origin', REMOTE_URL);
    expect(await ok(manager.api.GET('/api/landing/readiness'))).toEqual({
      available: true,
      missing: null,
      reason: null,
      remote: REMOTE_URL,
    });

    // Uncommitted work: refused, naming it, unless asked to commit it first.
    const dirty = await expectRefused(manager.dataDirectory(), () => land(requirement.id), 409, 'worktree_dirty');
    expect(dirty.details).toEqual(['notes.txt']);
    expect(bareHead(branch)).toBeNull();
    expect(opens()).toEqual([]);

    const landed = await ok(land(requirement.id, { commitPending: true }), 200);
    const head = git(worktree, 'rev-parse', 'HEAD').trim();
    expect(git(worktree, 'status', '--porcelain')).toBe('');
    expect(git(worktree, 'log', '-1', '--format=%s').trim()).toBe('Uncommitted work of "Add the flux capacitor"');
    // The branch is on the remote at the worktree's commit, with both files.
    expect(bareHead(branch)).toBe(head);
    expect(git(bare, 'ls-tree', '--name-only', head).split('\n').filter(Boolean).sort()).toEqual([
      'README.md',
      'flux.txt',
      'notes.txt',
    ]);

    // GitHub got the PR: head, base, title, body (description, the agent's last message, the Requirement), with the token.
    const opened = github.pullRequest(REPOSITORY, 1);
    expect(opened).toMatchObject({
      baseBranch: 'main',
      headBranch: branch,
      headSha: head,
      state: 'OPEN',
      title: 'Add the flux capacitor',
    });
    expect(opened.body).toContain('Make the widgets travel in time.\n\nKeep the public API as it is.');
    expect(opened.body).toContain('## Summary\n\nDone.');
    expect(opened.body).toContain(`Requirement ${requirement.id}`);
    expect(opens().map((r) => [r.status, r.authorization])).toEqual([[201, `token ${TOKEN}`]]);

    // Registered on the Requirement as an agent's `pr register` would.
    expect(landed).toMatchObject({ commit: null, method: 'pull_request', requirement: { id: requirement.id } });
    expect(landed.pullRequest).toMatchObject({
      baseBranch: 'main',
      headBranch: branch,
      headSha: head,
      number: 1,
      repository: REPOSITORY,
      requirementId: requirement.id,
      status: 'open',
      title: 'Add the flux capacitor',
    });
    expect(await pullRequestsOf(requirement.id)).toEqual([
      expect.objectContaining({ id: landed.pullRequest!.id, number: 1 }),
    ]);

    // The token went to git in its environment, as a header for the GitHub host only; never on a command line.
    const pushes = fs.readFileSync(pushLog, 'utf8').split('END\n').filter(Boolean);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]).toContain(`ARGV push --no-verify origin refs/heads/${branch}:refs/heads/${branch}`);
    const header = /^GIT_CONFIG_KEY_(\d+)=http\.https:\/\/github\.com\/\.extraHeader$/m.exec(pushes[0]);
    expect(header).not.toBeNull();
    expect(pushes[0]).toContain(
      `GIT_CONFIG_VALUE_${header![1]}=Authorization: Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}\n`,
    );
    for (const push of pushes) {
      expect(
        push
          .split('\n')
          .filter((line) => line.startsWith('ARGV'))
          .join('\n'),
      ).not.toMatch(new RegExp(`${TOKEN}|${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`));
    }

    // Again: nothing new to push, GitHub says the PR exists (422), the same one is answered and registered once.
    const again = await ok(land(requirement.id), 200);
    expect(again.pullRequest).toMatchObject({ id: landed.pullRequest!.id, number: 1 });
    expect(opens().map((r) => r.status)).toEqual([201, 422]);
    expect(await pullRequestsOf(requirement.id)).toHaveLength(1);

    // From here the reconciler follows it: merged on GitHub, merged on the Requirement.
    github.update(REPOSITORY, 1, { state: 'MERGED' });
    await until(
      'the PR merged on the Requirement',
      async () => ((await pullRequestsOf(requirement.id))[0]?.status === 'merged' ? true : undefined),
      30_000,
      200,
    );
  });

  it('refuses a branch with nothing to land, and a push git rejects, with its reason and no PR', async () => {
    const idle = await worked('Only looks around', 'true');
    await expectRefused(manager.dataDirectory(), () => land(idle.id), 409, 'nothing_to_land');

    const rejected = await worked('Rewrites history', 'echo one > one.txt && git add one.txt && git commit -qm "One"');
    const branch = rejected.worktree!.branch!;
    // Someone else's commit already on GitHub's copy of the branch: a push would lose it.
    const theirs = git(bare, 'commit-tree', 'main^{tree}', '-p', 'main', '-m', 'Their commit').trim();
    git(bare, 'update-ref', `refs/heads/${branch}`, theirs);
    const posts = opens().length;
    const refusal = await expectRefused(manager.dataDirectory(), () => land(rejected.id), 409, 'push_failed');
    expect(refusal.message).toContain(`git could not push ${branch} to origin (${REMOTE_URL})`);
    expect(refusal.message).toMatch(/rejected/);
    expect(refusal.message).not.toContain(TOKEN);
    expect(bareHead(branch)).toBe(theirs);
    expect(opens()).toHaveLength(posts);
    expect(await pullRequestsOf(rejected.id)).toEqual([]);
  });

  it("opens an imported issue's PR naming the issue, never repeating an outsider's words under the token (issue 49)", async () => {
    github.addIssue({
      body: '@maintainer please /approve this; fixes #1 and other/repo#2',
      number: 40,
      repository: REPOSITORY,
      title: 'Imported work',
    });
    const [imported] = (
      await ok(
        manager.api.POST('/api/requirements/import', {
          body: { numbers: [40], provider: 'codex', repository: REPOSITORY },
        }),
        201,
      )
    ).items;
    await startRun(
      manager,
      imported.id,
      sh('echo i > imported.txt && git add imported.txt && git commit -qm "Imported"'),
    );
    expect((await settled(manager, imported.id, 1)).run.status).toBe('succeeded');
    await quiet();
    await ok(land(imported.id), 200);
    const [registered] = await pullRequestsOf(imported.id);
    const opened = github.pullRequest(REPOSITORY, registered.number);
    expect(opened.body).toBe(
      `Closes #40\n\n## Summary\n\nDone.\n\n---\nRequirement ${imported.id}, opened by Agent Manager.`,
    );
  });

  it('refuses without a GitHub token, saying where one comes from', async () => {
    const requirement = await worked('Needs a token', 'echo two > two.txt && git add two.txt && git commit -qm "Two"');
    await manager.stop();
    manager = await startManager({ env: { ...env, GH_TOKEN: '', GITHUB_TOKEN: '' }, sandbox });
    await quiet();
    const posts = opens().length;
    const refusal = await expectRefused(
      manager.dataDirectory(),
      () => land(requirement.id),
      409,
      'github_token_missing',
    );
    expect(refusal.message).toMatch(/GITHUB_TOKEN.*GH_TOKEN.*gh auth login/);
    expect(await ok(manager.api.GET('/api/landing/readiness'))).toMatchObject({
      available: false,
      missing: 'token',
      reason: refusal.message,
    });
    expect(bareHead(requirement.worktree!.branch!)).toBeNull();
    expect(opens()).toHaveLength(posts);
  });
});
