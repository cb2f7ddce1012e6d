import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Injectable } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid } from '../core/errors/domain-error';
import { git, gitSucceeds } from '../core/git/git';
import { CREATE_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';

/**
 * A reviewer's temporary detached worktree at the PR's head: never the person's checkout or the
 * RD worktree. It has no row (a leftover is an orphan the next start's sweep removes).
 */
@Injectable()
export class ReviewWorktrees {
  constructor(
    private readonly configuration: ConfigurationService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** A reviewer's temporary detached worktree at `sha` (fetched from origin if missing); null in place. */
  async make(reviewId: string, sha: string, pullRequestNumber: number): Promise<string | null> {
    const repo = await this.workspace.gitWorkspace();
    if (repo === null || this.configuration.get('isolation') === 'in_place') {
      return null;
    }
    if ((await this.workspace.resolveCommit(repo.top, sha)) === null) {
      const fetched =
        (await gitSucceeds(['fetch', '--no-tags', 'origin', sha], { cwd: repo.top, timeoutMs: CREATE_TIMEOUT_MS })) ||
        (await gitSucceeds(['fetch', '--no-tags', 'origin', `pull/${pullRequestNumber}/head`], { cwd: repo.top, timeoutMs: CREATE_TIMEOUT_MS }));
      if (!fetched || (await this.workspace.resolveCommit(repo.top, sha)) === null) {
        throw invalid('review_head_missing', `the PR head ${sha} is not in the repository and could not be fetched from origin`);
      }
    }
    const directory = this.workspace.directory;
    const target = path.join(directory, `review-${reviewId.replace(/^rev_/, '').slice(0, 12)}`);
    await fs.mkdir(directory, { recursive: true });
    const env = await this.workspace.lfsEnvironment(repo.top);
    await this.workspace.inRepository(repo.top, async () => {
      await this.workspace.clear(repo.top, target);
      await git(['worktree', 'add', '--detach', target, sha], { cwd: repo.top, env, timeoutMs: CREATE_TIMEOUT_MS });
    });
    return target;
  }

  async remove(target: string): Promise<void> {
    const repo = await this.workspace.gitWorkspace();
    await this.workspace.inRepository(repo?.top ?? target, () => this.workspace.clear(repo?.top ?? null, target));
  }
}
