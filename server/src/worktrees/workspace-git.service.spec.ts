import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { ConfigurationService } from '../core/configuration/configuration.service';
import type { Runtime } from '../core/runtime';
import { workspaceGitState } from '../core/git/git';
import { WorkspaceGit } from './workspace-git.service';

describe('WorkspaceGit.gitWorkspace (real git)', () => {
  const sh = (args: string[], cwd: string) =>
    execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'pipe' })
      .toString()
      .trim();
  const at = (root: string) =>
    new WorkspaceGit(
      {} as ConfigurationService,
      { paths: { dataDirectory: path.join(dir, '.data'), root } } as unknown as Runtime,
    );
  let dir: string;
  beforeEach(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-workspace-git-')));
    fs.mkdirSync(path.join(dir, '.data'));
  });
  afterEach(() => fs.rmSync(dir, { force: true, recursive: true }));

  it('names the top, the branch and the commit, from a folder inside the repository too', async () => {
    sh(['init', '-q', '-b', 'feature/x'], dir);
    sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], dir);
    fs.mkdirSync(path.join(dir, 'sub'));
    const head = sh(['rev-parse', 'HEAD'], dir);
    expect(await at(dir).gitWorkspace()).toEqual({ branch: 'feature/x', head, top: dir });
    expect(await at(path.join(dir, 'sub')).gitWorkspace()).toEqual({ branch: 'feature/x', head, top: dir });
  });

  it('says detached as no branch, and a linked worktree names its own branch', async () => {
    sh(['init', '-q', '-b', 'main'], dir);
    sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], dir);
    const head = sh(['rev-parse', 'HEAD'], dir);
    const linked = path.join(dir, 'linked');
    sh(['worktree', 'add', '-q', '-b', 'side', linked], dir);
    expect(await at(linked).gitWorkspace()).toEqual({ branch: 'side', head, top: linked });
    sh(['checkout', '-q', '--detach'], dir);
    expect(await at(dir).gitWorkspace()).toEqual({ branch: null, head, top: dir });
  });

  it('is null before the first commit and outside a repository', async () => {
    expect(await at(dir).gitWorkspace()).toBeNull();
    sh(['init', '-q', '-b', 'main'], dir);
    expect(await at(dir).gitWorkspace()).toBeNull();
  });

  it('gives the git directories with the facts, before the first commit too, and none outside a repository', async () => {
    expect(await at(dir).workspaceFacts()).toEqual({ git: null, repo: null });
    expect(await workspaceGitState(dir)).toBe('not_git');
    sh(['init', '-q', '-b', 'main'], dir);
    const own = { commonDir: path.join(dir, '.git'), gitDir: path.join(dir, '.git') };
    expect(await at(dir).workspaceFacts()).toEqual({ git: own, repo: null });
    expect(await workspaceGitState(dir)).toBe('no_commit');
    sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], dir);
    const head = sh(['rev-parse', 'HEAD'], dir);
    expect(await at(dir).workspaceFacts()).toEqual({ git: own, repo: { branch: 'main', head, top: dir } });
    expect(await workspaceGitState(dir)).toBe('repository');
    const linked = path.join(dir, 'linked');
    sh(['worktree', 'add', '-q', '-b', 'side', linked], dir);
    expect(await at(linked).workspaceFacts()).toEqual({
      git: { commonDir: path.join(dir, '.git'), gitDir: path.join(dir, '.git', 'worktrees', 'linked') },
      repo: { branch: 'side', head, top: linked },
    });
    expect(await workspaceGitState(path.join(dir, '.git'))).toBe('not_git');
  });

  it('fails closed (issue 44): a git that fails is 503, and a repository once seen that now seems none is 503 too, never in place', async () => {
    const fresh = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-never-git-')));
    try {
      // Never a repository: nothing to refuse, a Requirement there works in place.
      expect(await at(fresh).placeFacts()).toBeNull();
    } finally {
      fs.rmSync(fresh, { force: true, recursive: true });
    }
    sh(['init', '-q', '-b', 'main'], dir);
    sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], dir);
    const head = sh(['rev-parse', 'HEAD'], dir);
    expect(await at(dir).placeFacts()).toEqual({ branch: 'main', head, top: dir });
    // HEAD's branch deleted: git says "no commit", which is not taken at its word any more — by a
    // manager started afresh too (it is recorded in the data directory).
    fs.rmSync(path.join(dir, '.git', 'refs', 'heads', 'main'));
    for (const ask of [() => at(dir).placeFacts(), () => at(dir).repositoryFacts()]) {
      await expect(ask()).rejects.toMatchObject({
        code: 'workspace_git_unavailable',
        kind: 'unavailable',
        message: expect.stringContaining('HEAD names no commit'),
      });
    }
    sh(['update-ref', 'refs/heads/main', head], dir);
    expect(await at(dir).repositoryFacts()).toMatchObject({ repo: { head } });
    // git failing outright (a configuration it cannot parse) is an error with git's reason, not "no repository".
    fs.appendFileSync(path.join(dir, '.git', 'config'), '[broken\n');
    await expect(at(dir).placeFacts()).rejects.toMatchObject({
      code: 'workspace_git_unavailable',
      message: expect.stringContaining('config'),
    });
    await expect(at(dir).inPlaceFacts()).rejects.toMatchObject({ code: 'workspace_git_unavailable' });
    // What only reports still answers (nothing known), as before.
    expect(await at(dir).workspaceFacts()).toEqual({ git: null, repo: null });
  });
});
