import { Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor, PullRequestMissing } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict } from '../core/errors/domain-error';
import { GitError, git } from '../core/git/git';
import { audit } from '../events/event-log.service';
import { ForgeError } from '../forges/forge.errors';
import type { RestPullRequestFields } from '../forges/forge.types';
import { FORGE_WORDS } from '../forges/pull-request-forge';
import { GITHUB_CLIENT, GitHubClient } from '../github/github-client';
import { GITLAB_CLIENT, type GitLabClient } from '../gitlab/gitlab-client';
import { MessagesService } from '../messages/messages.service';
import type { PullRequestResponseDto } from '../pull-requests/dto/pull-request.dto';
import { PullRequestsService } from '../pull-requests/pull-requests.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import { PullRequestReadinessDto } from './dto/landing.dto';
import { ForgeRemote, findForgeRemote, gitHubHosts, gitLabHosts, remotePath, remoteEnvironment } from './forge-remote';
import { isAncestor, resolve } from './landing-git';
import { agentSummary, headMoved, refuseUnlandable, takeWork } from './land-steps';

export interface PullRequestLand {
  /** Commit the worktree's uncommitted work on its branch first, instead of refusing. */
  commitPending?: boolean;
  /** The work the person was shown: pushed only if it is still that (see LocalLand). */
  expectedHead?: string;
}

export interface PullRequestLandOutcome {
  requirement: RequirementResponseDto;
  pullRequest: PullRequestResponseDto;
}

/** A push of one branch: a large first push of a big repository takes a while. */
const PUSH_TIMEOUT_MS = 10 * 60_000;
/** GitHub refuses PR bodies above 65,536 characters. */
const BODY_MAX = 60_000;

/**
 * Lands a Requirement as a pull request (issue 28 §1): pushes its branch to the workspace's GitHub
 * remote and opens the PR there — or, when that remote is on GitLab, a merge request (issue 49 §5)
 * — then registers it on the Requirement exactly as an agent's `pr register` does
 * (PullRequestsService), so the reconciler follows it from then on.
 *
 * The push goes through the guarded `git()` (no credential helper, hook or askpass of the
 * repository runs); over HTTPS the forge client's token travels as an `http.<host>.extraHeader`
 * in the push's environment, scoped to the forge's host, never on a command line. Over SSH the
 * person's own keys push. Everything that can be refused without writing is checked first.
 */
@Injectable()
export class LandingPullRequests {
  private readonly logger = new Logger(LandingPullRequests.name);

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    @Inject(GITLAB_CLIENT) private readonly gitlab: GitLabClient,
    private readonly messages: MessagesService,
    private readonly pullRequests: PullRequestsService,
    private readonly requirements: RequirementsService,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
  ) {}

  /**
   * GET /landing/readiness: whether "Open pull request" can work here — a GitHub remote and a
   * token — and, when not, what is missing, in the words its refusal would use.
   */
  async readiness(): Promise<PullRequestReadinessDto> {
    const found = await this.prerequisites();
    return 'missing' in found
      ? { available: false, missing: found.missing, reason: found.reason, remote: null }
      : { available: true, missing: null, reason: null, remote: found.remote.url };
  }

  async open(id: string, options: PullRequestLand, actor: EventActor): Promise<PullRequestLandOutcome> {
    refuseUnlandable(await this.requirements.get(id));
    const found = await this.prerequisites();
    if ('missing' in found) {
      throw conflict(found.code, found.reason);
    }
    const { authorization, remote, top } = found;
    const started = Date.now();
    const outcome = await this.worktrees.whileHeld(id, () =>
      this.openHeld(id, top, remote, authorization, options, actor),
    );
    this.logger.log({
      ...audit(actor),
      ms: Date.now() - started,
      msg: 'pull request opened',
      number: outcome.pullRequest.number,
      pullRequestId: outcome.pullRequest.id,
      repository: outcome.pullRequest.repository,
      requirementId: id,
    });
    void this.worktrees.refresh(id).catch(() => undefined);
    return outcome;
  }

  /** The repository, its GitHub remote and the token a pull request needs, or the first one missing. */
  private async prerequisites(): Promise<
    | { top: string; remote: ForgeRemote; authorization: string }
    | { missing: PullRequestMissing; code: string; reason: string }
  > {
    const repo = await this.workspace.gitWorkspace();
    if (repo === null) {
      return {
        code: 'workspace_not_git',
        missing: 'repository',
        reason: 'the workspace is no longer a git repository with a commit: there is no branch to push',
      };
    }
    const remote = await findForgeRemote(repo.top, {
      github: gitHubHosts(this.configuration.get('githubApiUrl')),
      gitlab: gitLabHosts(this.configuration.get('gitlabApiUrl')),
    });
    if (remote === null) {
      return {
        code: 'github_remote_missing',
        missing: 'remote',
        reason: `the repository has no remote on GitHub or GitLab to push to: add one, e.g. \`git remote add origin https://github.com/OWNER/REPO.git\` in ${repo.top}, then open the pull request again`,
      };
    }
    if (remote.forge === 'gitlab') {
      const authorization = this.gitlab.gitAuthorization();
      if (authorization === null) {
        return {
          code: 'gitlab_token_missing',
          missing: 'token',
          reason:
            'Agent Manager has no GitLab token to open the merge request with: set GITLAB_TOKEN for it, or log in with `glab auth login`, then restart it',
        };
      }
      return { authorization, remote, top: repo.top };
    }
    const authorization = this.github.gitAuthorization();
    if (!this.github.configured || authorization === null) {
      return {
        code: 'github_token_missing',
        missing: 'token',
        reason:
          'Agent Manager has no GitHub token to open the pull request with: set GITHUB_TOKEN or GH_TOKEN for it, or log in with `gh auth login`, then restart it',
      };
    }
    return { authorization, remote, top: repo.top };
  }

  private async openHeld(
    id: string,
    top: string,
    remote: ForgeRemote,
    authorization: string,
    options: PullRequestLand,
    actor: EventActor,
  ): Promise<PullRequestLandOutcome> {
    const requirement = await this.requirements.get(id);
    refuseUnlandable(requirement);
    const branch = requirement.worktree?.branch as string;
    const baseRef = requirement.baseRef as string;
    const taken = await takeWork(this.worktrees, requirement, options);
    const head = await resolve(top, `refs/heads/${branch}`);
    if (head !== taken) {
      throw headMoved(requirement, taken, head);
    }
    // The base as the repository knows it: its local branch, else what was fetched of the remote's.
    const base =
      (await resolve(top, `refs/heads/${baseRef}`)) ??
      (await resolve(top, `refs/remotes/${remote.name}/${baseRef}`)) ??
      (await resolve(top, baseRef));
    if (base !== null && (await isAncestor(top, head, base))) {
      throw conflict(
        'nothing_to_land',
        `${baseRef} already has everything on ${branch}: there is nothing to open a pull request for`,
      );
    }
    await this.push(top, remote, branch, authorization);
    const repository = remotePath(remote);
    const body = await this.body(requirement, remote);
    let pr: RestPullRequestFields;
    try {
      const input = { base: baseRef, body, head: branch, title: requirement.title };
      pr =
        remote.forge === 'gitlab'
          ? (await this.gitlab.openMergeRequest(repository, input)).pullRequest
          : (await this.github.createPullRequest(remote.owner, remote.repo, input)).pullRequest;
    } catch (err) {
      if (err instanceof ForgeError) {
        const words = FORGE_WORDS[remote.forge];
        throw conflict(
          'pull_request_failed',
          `${branch} was pushed to ${repository}, but ${words.name} did not open the ${words.request}: ${err.message}. Open it again once that is fixed (the push is kept)`,
        );
      }
      throw err;
    }
    const pullRequest = await this.pullRequests.register(
      {
        baseBranch: pr.baseBranch,
        forge: remote.forge,
        headBranch: pr.headBranch,
        headSha: pr.headSha,
        number: pr.number,
        repository: pr.repository || repository,
        requirementId: id,
        status: pr.status,
        title: pr.title,
        url: pr.url,
      },
      { kind: 'owner' },
      actor,
    );
    return { pullRequest, requirement: await this.requirements.get(id) };
  }

  /**
   * `git push <remote> refs/heads/<branch>:refs/heads/<branch>`, never forced: a branch that
   * moved on GitHub (someone pushed to it) or was rewritten here is refused with git's reason.
   */
  private async push(top: string, remote: ForgeRemote, branch: string, authorization: string): Promise<void> {
    const env = remoteEnvironment(remote, authorization);
    try {
      await git(['push', '--no-verify', remote.name, `refs/heads/${branch}:refs/heads/${branch}`], {
        cwd: top,
        env,
        timeoutMs: PUSH_TIMEOUT_MS,
      });
    } catch (err) {
      if (err instanceof GitError) {
        const said = [...new Set(err.stderr.split('\n').map((line) => line.trim()))]
          .filter((line) => line !== '' && !/^(To |Done$|hint:)/.test(line))
          .slice(-4)
          .join(' ');
        throw conflict(
          'push_failed',
          `git could not push ${branch} to ${remote.name} (${remote.url}): ${said || err.message}`,
        );
      }
      throw err;
    }
  }

  /**
   * The Requirement's description, what its agent said last, and which Requirement it is. One
   * imported from an issue (issue 49) names the issue instead of repeating its text: posted under
   * the person's token, an outsider's words would mention, close and command as they liked.
   */
  private async body(requirement: RequirementResponseDto, remote: ForgeRemote): Promise<string> {
    const summary = await agentSummary(this.messages, requirement.id);
    const source = requirement.source;
    const repository = remotePath(remote);
    // GitLab closes an issue of another forge by nothing: it is named by its address instead.
    const about =
      source === null
        ? requirement.description.trim()
        : source.forge !== remote.forge
          ? `Resolves ${source.url}`
          : `Closes ${source.repository.toLowerCase() === repository.toLowerCase() ? '' : source.repository}#${source.number}`;
    const text = [about, summary === '' ? '' : `## Summary\n\n${summary}`].filter((part) => part !== '').join('\n\n');
    const footer = `Requirement ${requirement.id}, opened by Agent Manager.`;
    const cut = text.length > BODY_MAX ? `${text.slice(0, BODY_MAX)}…` : text;
    // GitLab runs a line that starts with `/` as a quick action (label, assign, retarget…) under
    // the person's token: the agent's words must not. A backslash keeps the line as text.
    const inert = remote.forge === 'gitlab' ? cut.replace(/^(\s*)\//gm, '$1\\/') : cut;
    return `${inert}${text === '' ? '' : '\n\n---\n'}${footer}`;
  }
}
