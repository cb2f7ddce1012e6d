import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Injectable } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid } from '../core/errors/domain-error';
import { gitSucceeds } from '../core/git/git';
import { createAgentRepository } from './agent-repository';
import { CREATE_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';

/**
 * A reviewer's temporary working copy at the PR's head: never the person's checkout or the RD
 * worktree. Like an RD agent's, a repository of its own, detached at the head, that borrows the
 * workspace's objects read-only (issue 44): nothing a reviewer does reaches the person's refs or
 * objects. It has no row (a leftover is an orphan the next start's sweep removes).
 */
@Injectable()
export class ReviewWorktrees {
  constructor(
    private readonly configuration: ConfigurationService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** A reviewer's temporary working copy at `sha` (fetched from origin if missing); null in place. */
  async make(reviewId: string, sha: string, pullRequestNumber: number): Promise<string | null> {
    if (this.configuration.get('isolation') === 'in_place') {
      return null;
    }
    const facts = await this.workspace.workspaceFacts();
    const { git: dirs, repo } = facts;
    if (repo === null || dirs === null) {
      return null;
    }
    if ((await this.workspace.resolveCommit(repo.top, sha)) === null) {
      const fetched =
        (await gitSucceeds(['fetch', '--no-tags', 'origin', sha], { cwd: repo.top, timeoutMs: CREATE_TIMEOUT_MS })) ||
        (await gitSucceeds(['fetch', '--no-tags', 'origin', `pull/${pullRequestNumber}/head`], {
          cwd: repo.top,
          timeoutMs: CREATE_TIMEOUT_MS,
        }));
      if (!fetched || (await this.workspace.resolveCommit(repo.top, sha)) === null) {
        throw invalid(
          'review_head_missing',
          `the PR head ${sha} is not in the repository and could not be fetched from origin`,
        );
      }
    }
    const target = path.join(this.workspace.directory, `review-${reviewId.replace(/^rev_/, '').slice(0, 12)}`);
    await fs.rm(target, { force: true, recursive: true });
    await createAgentRepository({
      base: null,
      branch: null,
      env: await this.workspace.lfsEnvironment(repo.top),
      personCommonDir: dirs.commonDir,
      personTop: repo.top,
      snapshotIndex: null,
      start: sha,
      target,
    });
    return target;
  }

  async remove(target: string): Promise<void> {
    const repo = await this.workspace.gitWorkspace();
    // One made before issue 44 is a linked worktree: clearing it prunes its entry too.
    await this.workspace.inRepository(repo?.top ?? target, () => this.workspace.clear(repo?.top ?? null, target));
  }
}
