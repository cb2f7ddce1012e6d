import * as fs from 'node:fs';
import * as path from 'node:path';

import { git } from './support/git-repo';
import { ok } from './support/api';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';

// Issue 26 §5: `git init` alone leaves agents in the person's checkout. The manager offers the fix
// (POST /api/workspace/first-commit): an empty first commit, made only while the repository truly
// has none and nothing is staged, that touches neither the index nor the working files, so that
// the Requirements created afterwards get their own worktree.

jest.setTimeout(60_000);

describe('the first commit of an empty repository (issue 26 §5)', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  const create = (title: string) => manager.api.POST('/api/requirements', { body: { provider: 'codex', title } });
  const firstCommit = () => manager.api.POST('/api/workspace/first-commit');
  const state = async () => (await ok(manager.api.GET('/api/workspace/git'))).state;
  const initEmpty = () => {
    git(sandbox.workspace, 'init', '-q', '-b', 'main');
    git(sandbox.workspace, 'config', 'user.email', 'person@example.com');
    git(sandbox.workspace, 'config', 'user.name', 'Person');
  };
  const commits = () => git(sandbox.workspace, 'rev-list', '--all', '--count').trim();

  beforeEach(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterEach(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('makes an empty first commit, leaves the working files and the index alone, and later Requirements get worktrees', async () => {
    initEmpty();
    fs.writeFileSync(path.join(sandbox.workspace, 'notes.txt'), 'mine, untracked\n');
    expect(await state()).toBe('no_commit');
    const before = await create('before the commit');
    expect(before.data).toMatchObject({ isolation: 'in_place', warnings: ['no_commit_in_place'] });

    const made = await firstCommit();
    expect(made.status).toBe(200);
    const { commit } = made.data!;
    expect(made.data).toMatchObject({ state: 'repository' });
    expect(git(sandbox.workspace, 'rev-parse', 'HEAD').trim()).toBe(commit);
    expect(git(sandbox.workspace, 'symbolic-ref', '--short', 'HEAD').trim()).toBe('main');
    // Empty: no file in the commit, the person's file untouched and still untracked, nothing staged.
    expect(git(sandbox.workspace, 'ls-tree', '-r', '--name-only', 'HEAD')).toBe('');
    expect(git(sandbox.workspace, 'status', '--porcelain')).toBe('?? notes.txt\n');
    expect(fs.readFileSync(path.join(sandbox.workspace, 'notes.txt'), 'utf8')).toBe('mine, untracked\n');
    expect(await state()).toBe('repository');

    const after = await create('after the commit');
    expect(after.status).toBe(201);
    expect(after.data).toMatchObject({ isolation: 'worktree', warnings: [] });

    // Only while there is no commit: a second one is refused, and nothing is added.
    const again = await firstCommit();
    expect(again.status).toBe(409);
    expect(again.error).toMatchObject({ code: 'workspace_has_commit' });
    expect(commits()).toBe('1');
  });

  it('refuses with 409 when files are staged (never commits them), and outside a repository', async () => {
    const outside = await firstCommit();
    expect(outside.status).toBe(409);
    expect(outside.error).toMatchObject({ code: 'workspace_not_git' });

    initEmpty();
    fs.writeFileSync(path.join(sandbox.workspace, 'staged.txt'), 'staged by the person\n');
    git(sandbox.workspace, 'add', 'staged.txt');
    const refused = await firstCommit();
    expect(refused.status).toBe(409);
    expect(refused.error).toMatchObject({ code: 'staged_changes' });
    expect(refused.error!.message).toContain('git commit');
    expect(git(sandbox.workspace, 'rev-list', '--all')).toBe('');
    expect(git(sandbox.workspace, 'status', '--porcelain')).toBe('A  staged.txt\n');
    expect(await state()).toBe('no_commit');
  });
});
