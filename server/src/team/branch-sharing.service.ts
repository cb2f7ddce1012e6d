import { Inject, Injectable, Logger } from '@nestjs/common';

import type { ManagerEvent } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { git } from '../core/git/git';
import { RUNTIME, type Runtime } from '../core/runtime';
import { OnCommitted } from '../events/on-committed';
import { GITHUB_CLIENT, type GitHubClient } from '../github/github-client';
import { GITLAB_CLIENT, type GitLabClient } from '../gitlab/gitlab-client';
import { gitHubHosts, gitLabHosts, parseRemoteUrl, remoteEnvironment } from '../landing/forge-remote';
import { RequirementsService } from '../requirements/requirements.service';
import { RUN_ENDS, restingAfter } from '../runs/run-ends';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import { type RemoteAccess, WorktreesService } from '../worktrees/worktrees.service';

/** The remote every clone of a board shares: the one the board is named after by default. */
const SHARED_REMOTE = 'origin';

/**
 * Team mode: a Requirement's branch travels between runners through the repository's `origin`
 * (docs/team-mode.md, "Move"). After each run that leaves the session resting, the runner that
 * runs it pushes the branch (never forced); a move fetches it from there.
 *
 * The push and the fetch go through the guarded `git()` like a land's: no hook, credential
 * helper or askpass of the agent-writable repository runs. Over HTTPS to GitHub the client's
 * token travels as an `http.<host>.extraHeader` in git's environment, scoped to that host; over
 * SSH the person's own keys, in batch mode; any other remote gets no credentials from us.
 */
@Injectable()
export class BranchSharing {
  private readonly logger = new Logger(BranchSharing.name);

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    @Inject(GITLAB_CLIENT) private readonly gitlab: GitLabClient,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
  ) {}

  /** The shared remote and what reaching it needs, or null when the repository has none. */
  async remote(): Promise<RemoteAccess | null> {
    const repo = await this.workspace.gitWorkspace();
    if (repo === null) {
      return null;
    }
    const out = await git(['config', '--get', `remote.${SHARED_REMOTE}.url`], {
      cwd: repo.top,
      maxBytes: 4096,
      okCodes: [0, 1],
      timeoutMs: 10_000,
    });
    const url = out.code === 0 ? out.stdout.trim() : '';
    if (url === '') {
      return null;
    }
    const parsed = parseRemoteUrl(url, true);
    // A forge's token only for that forge's host; any other HTTP remote gets none from us.
    const host = parsed?.host.replace(/:\d+$/, '') ?? '';
    const authorization = gitHubHosts(this.configuration.get('githubApiUrl')).includes(host)
      ? this.github.gitAuthorization()
      : gitLabHosts(this.configuration.get('gitlabApiUrl')).includes(host)
        ? this.gitlab.gitAuthorization()
        : null;
    const env = parsed === null ? {} : remoteEnvironment(parsed, authorization);
    return { env, name: SHARED_REMOTE };
  }

  /** After a run that left its session at rest, on a board: the branch of a Requirement this runner runs goes to the shared remote. */
  @OnCommitted(RUN_ENDS)
  async runsEnded(events: ManagerEvent[]): Promise<void> {
    const board = this.runtime.board;
    if (!board) {
      return;
    }
    for (const requirementId of restingAfter(events, board.runnerId)) {
      await this.shareAfterRun(requirementId, board.runnerId);
    }
  }

  private async shareAfterRun(requirementId: string, runnerId: string): Promise<void> {
    try {
      const requirement = await this.requirements.find(requirementId);
      if (!requirement || requirement.runner?.id !== runnerId || requirement.worktree?.mode !== 'worktree') {
        return;
      }
      const remote = await this.remote();
      if (remote === null) {
        this.logger.warn({
          msg: "the repository has no origin remote: the Requirement's branch is not shared with the board",
          requirementId,
        });
        return;
      }
      const pushed = await this.worktrees.pushBranch(requirementId, remote);
      if (pushed !== null) {
        this.logger.log({ commit: pushed, msg: 'branch shared with the board', requirementId });
      }
    } catch (err) {
      this.logger.warn({
        error: (err as Error).message,
        msg: "could not push the Requirement's branch to origin; a move to another runner starts from what was pushed last",
        requirementId,
      });
    }
  }
}
