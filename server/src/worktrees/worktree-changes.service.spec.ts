import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import type { RequirementsService } from '../requirements/requirements.service';
import { WorktreeChanges } from './worktree-changes.service';
import type { WorkspaceGit } from './workspace-git.service';
import type { WorktreesRepository } from './worktrees.repository';

// The real git, with one seam: a listing's `git ls-files` can first run `beforeListing`, which is
// how the test removes the worktree between the service's checks and its listing (what a cancel
// or a delete racing a read of the Changes tab does; the HTTP fuzz caught it as a 500).
let beforeListing: (() => void) | null = null;
jest.mock('../core/git/git', () => {
  const actual = jest.requireActual<typeof import('../core/git/git')>('../core/git/git');
  return {
    ...actual,
    git: (args: string[], options: Parameters<typeof actual.git>[1]) => {
      if (args[0] === 'ls-files' && beforeListing) {
        beforeListing();
      }
      return actual.git(args, options);
    },
  };
});

describe('WorktreeChanges', () => {
  let top: string;
  let service: WorktreeChanges;

  beforeEach(() => {
    top = fs.mkdtempSync(path.join(os.tmpdir(), 'am-changes-'));
    const run = (...args: string[]) =>
      execFileSync('git', args, { cwd: top, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
    run('init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(top, 'a.txt'), 'a\n');
    run('add', '.');
    run('commit', '-q', '-m', 'first');
    fs.writeFileSync(path.join(top, 'new.txt'), 'new\n');
    const row = {
      baseRef: 'main',
      baseSha: null,
      createdAt: '2026-12-04T00:00:00.000Z',
      isolation: 'worktree',
      path: top,
      removedAt: null,
    } as unknown as RequirementWorktreeEntity;
    const repository = { find: () => Promise.resolve(row) } as unknown as WorktreesRepository;
    const workspace = { links: () => [], resolveCommit: () => Promise.resolve(null) } as unknown as WorkspaceGit;
    service = new WorktreeChanges(repository, {} as RequirementsService, workspace);
  });

  afterEach(() => {
    beforeListing = null;
    fs.rmSync(top, { force: true, recursive: true });
  });

  it('lists a worktree that is there', async () => {
    expect((await service.changes('req_x')).files.map((f) => f.path)).toEqual(['new.txt']);
  });

  it('answers a worktree removed during the read as 409 no_worktree, not a server error', async () => {
    beforeListing = () => fs.rmSync(top, { force: true, recursive: true });
    await expect(service.changes('req_x')).rejects.toMatchObject({ code: 'no_worktree', kind: 'conflict' });
  });

  it('keeps any other failure of a listing what it is', async () => {
    // The worktree is still there, but its repository is not readable as one any more.
    beforeListing = () => fs.writeFileSync(path.join(top, '.git', 'HEAD'), 'garbage\n');
    await expect(service.changes('req_x')).rejects.not.toMatchObject({ code: 'no_worktree' });
  });
});
