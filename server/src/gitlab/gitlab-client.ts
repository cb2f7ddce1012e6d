// The manager's only door to GitLab (issue 49 §5), for gitlab.com and self-hosted instances alike.
// GitLab has no GraphQL batch the way GitHub's reconciler uses one, and its REST limits are per
// minute and generous (2,000 authenticated requests a minute on gitlab.com), so a merge request is
// read with one request for its summary and a few for its snapshot. How requests travel (timeouts,
// retries, rate limits, pages) is gitlab-http.ts; failed jobs' logs are gitlab-job-logs.ts; what
// GitLab's answers mean in the forges' shapes is gitlab-mapping.ts.
import { Logger } from '@nestjs/common';

import { ForgeError } from '../forges/forge.errors';
import {
  type CheckRun,
  type IssueComment,
  type PullRequestFetchError,
  type PullRequestRef,
  type PullRequestResult,
  type PullRequestSnapshot,
  type PullRequestSummary,
  type RestPullRequestFields,
  type ReviewThreadComment,
  SNAPSHOT_LIMITS,
  pullRequestKey,
} from '../forges/forge.types';
import type { IssueForge } from '../forges/forge-issues';
import type { PullRequestForge } from '../forges/pull-request-forge';
import { GITLAB_API_URL, type GitLabClientOptions, GitLabHttp, encodeProject } from './gitlab-http';
import { GitLabIssues } from './gitlab-issues';
import { GitLabJobLogs } from './gitlab-job-logs';
import { commentOf, pipelineState, restFieldsOf, summaryOf, threadNoteOf } from './gitlab-mapping';
import { type GitLabToken, resolveGitLabToken } from './gitlab-token';
import type { GitLabDiscussion, GitLabPipeline, GitLabJob, GitLabMergeRequest, GitLabUser } from './gitlab.types';

/** Nest injection token of the GitLab client. */
export const GITLAB_CLIENT = Symbol('GitLabClient');

/** Failed jobs whose logs are read per pipeline: the first few say what broke. */
const FAILED_JOBS_WITH_LOGS = 5;
/** Pages of discussions read per merge request (100 each): the newest are kept from these. */
const DISCUSSION_PAGES = 5;
/** Failures that would hit every request alike: the rest of a batch is skipped, not tried. */
const STOPS_A_BATCH = new Set(['rate_limited', 'unauthorized', 'timeout', 'network', 'not_configured']);

/** Resolves the token (GITLAB_TOKEN, else glab's for the API's host) and builds the client. */
export async function createGitLabClient(
  options: Omit<GitLabClientOptions, 'token'> & { env?: NodeJS.ProcessEnv; glabExecutable?: string } = {},
): Promise<GitLabClient> {
  const baseUrl = options.baseUrl ?? GITLAB_API_URL;
  let hostname = 'gitlab.com';
  try {
    hostname = new URL(baseUrl).host;
  } catch {
    // An unparsable gitlabApiUrl: every call fails and says so; doctor names the setting.
  }
  const token: GitLabToken | null = await resolveGitLabToken({
    env: options.env,
    glabExecutable: options.glabExecutable,
    hostname,
  });
  const client = new GitLabClient({ ...options, token: token?.token ?? null });
  client.tokenSource = token?.source ?? null;
  return client;
}

export class GitLabClient implements PullRequestForge, IssueForge {
  readonly kind = 'gitlab' as const;
  private readonly logger = new Logger(GitLabClient.name);
  private readonly http: GitLabHttp;
  private readonly jobLogs: GitLabJobLogs;
  private readonly issues: GitLabIssues;
  readonly configured: boolean;
  readonly baseUrl: string;
  /** Where the token came from, when built by createGitLabClient. */
  tokenSource: GitLabToken['source'] | null = null;
  private ownLogin: Promise<string> | null = null;

  constructor(options: GitLabClientOptions) {
    this.http = new GitLabHttp(options);
    this.jobLogs = new GitLabJobLogs(this.http);
    this.issues = new GitLabIssues(this.http, this.logger);
    this.configured = this.http.token !== null;
    this.baseUrl = this.http.baseUrl;
  }

  budget(): { remaining: number; resetAt: string } | null {
    return this.http.budget();
  }

  login(): Promise<string> {
    this.ownLogin ??= this.http.json<GitLabUser>('GET', '/user').then((user) => user.username);
    this.ownLogin.catch(() => (this.ownLogin = null)); // asked again next time
    return this.ownLogin;
  }

  // The issue side (issue intake and write-back) is GitLabIssues'; the forge answers for it.
  readonly getIssue: IssueForge['getIssue'] = (...args) => this.issues.getIssue(...args);
  readonly listIssues: IssueForge['listIssues'] = (...args) => this.issues.listIssues(...args);
  readonly listIssuesUpdatedSince: IssueForge['listIssuesUpdatedSince'] = (...args) =>
    this.issues.listIssuesUpdatedSince(...args);
  readonly listIssueComments: IssueForge['listIssueComments'] = (...args) => this.issues.listIssueComments(...args);
  readonly listIssueCommentsSince: IssueForge['listIssueCommentsSince'] = (...args) =>
    this.issues.listIssueCommentsSince(...args);
  readonly listCommentsSince: IssueForge['listCommentsSince'] = (...args) => this.issues.listCommentsSince(...args);
  readonly intakeLabeler: IssueForge['intakeLabeler'] = (...args) => this.issues.intakeLabeler(...args);
  readonly commentOnIssue: IssueForge['commentOnIssue'] = (...args) => this.issues.commentOnIssue(...args);
  readonly closeIssue: IssueForge['closeIssue'] = (...args) => this.issues.closeIssue(...args);

  async fetchPullRequestSummaries(
    refs: readonly PullRequestRef[],
  ): Promise<Map<string, PullRequestSummary | PullRequestFetchError>> {
    return this.eachRef(refs, async (ref) => summaryOf(ref, await this.mergeRequest(ref.repository, ref.number)));
  }

  async fetchPullRequests(refs: readonly PullRequestRef[]): Promise<Map<string, PullRequestResult>> {
    return this.eachRef(refs, (ref) => this.snapshot(ref));
  }

  async lookUpPullRequest(repository: string, number: number): Promise<RestPullRequestFields> {
    return restFieldsOf(repository, await this.mergeRequest(repository, number));
  }

  /** One merge request, as GitLab's single-MR endpoint answers it (with its head pipeline). Throws ForgeError. */
  mergeRequest(project: string, iid: number): Promise<GitLabMergeRequest> {
    return this.http.json<GitLabMergeRequest>('GET', `/projects/${encodeProject(project)}/merge_requests/${iid}`);
  }

  /**
   * Opens a merge request (land with `method: "pull_request"` on a GitLab remote), or answers the
   * one already open from `head` into `base`: GitLab keeps one per pair and answers a second 409
   * (a retry, a person's click after the agent opened it). Throws ForgeError.
   */
  async openMergeRequest(
    project: string,
    input: { base: string; head: string; title: string; body: string },
  ): Promise<{ pullRequest: RestPullRequestFields; created: boolean }> {
    const path = `/projects/${encodeProject(project)}/merge_requests`;
    try {
      const mr = await this.http.json<GitLabMergeRequest>('POST', path, {
        body: { description: input.body, source_branch: input.head, target_branch: input.base, title: input.title },
      });
      // The answer to a create carries no pipeline and may lack the head: read it as the reconciler will.
      return { created: true, pullRequest: restFieldsOf(project, await this.mergeRequest(project, mr.iid)) };
    } catch (err) {
      if (!(err instanceof ForgeError && err.details.status === 409)) {
        throw err;
      }
      const [open] = await this.http.json<GitLabMergeRequest[]>('GET', path, {
        query: { per_page: '1', source_branch: input.head, state: 'opened', target_branch: input.base },
      });
      if (open === undefined) {
        throw err;
      }
      return { created: false, pullRequest: restFieldsOf(project, open) };
    }
  }

  /**
   * How git authenticates to GitLab over HTTPS with this token, as a header for a push: Basic with
   * the `oauth2` user, which GitLab accepts for personal, project and OAuth tokens alike. Null without one.
   */
  gitAuthorization(): string | null {
    return this.http.token === null
      ? null
      : `Authorization: Basic ${Buffer.from(`oauth2:${this.http.token}`).toString('base64')}`;
  }

  /** Reads each ref on its own; a failure that would hit them all stops the rest (`skipped`, with its cause). */
  private async eachRef<T>(
    refs: readonly PullRequestRef[],
    read: (ref: PullRequestRef) => Promise<T>,
  ): Promise<Map<string, T | PullRequestFetchError>> {
    if (!this.configured) {
      throw new ForgeError('not_configured', 'no GitLab token (GITLAB_TOKEN or `glab auth login`)');
    }
    const results = new Map<string, T | PullRequestFetchError>();
    let stop: ForgeError | null = null;
    for (const ref of refs) {
      const key = pullRequestKey(ref);
      if (results.has(key)) {
        continue;
      }
      if (stop) {
        results.set(key, { cause: stop.code, code: 'skipped', kind: 'error', message: stop.message, ref });
        continue;
      }
      try {
        results.set(key, await read(ref));
      } catch (err) {
        const error = err instanceof ForgeError ? err : new ForgeError('failed', (err as Error).message);
        if (STOPS_A_BATCH.has(error.code)) {
          stop = error;
          results.set(key, { cause: error.code, code: 'skipped', kind: 'error', message: error.message, ref });
        } else {
          const code = error.code === 'not_found' || error.code === 'forbidden' ? error.code : 'failed';
          results.set(key, { cause: error.code, code, kind: 'error', message: error.message, ref });
        }
      }
    }
    return results;
  }

  /** A merge request whole: its notes (threads and plain comments), and its head pipeline's failed jobs with their logs' tails. */
  private async snapshot(ref: PullRequestRef): Promise<PullRequestSnapshot> {
    const project = encodeProject(ref.repository);
    const mr = await this.mergeRequest(ref.repository, ref.number);
    const discussions = await this.http.newestPages<GitLabDiscussion>(
      `/projects/${project}/merge_requests/${ref.number}/discussions`,
      DISCUSSION_PAGES,
    );
    const comments: IssueComment[] = [];
    const threads: ReviewThreadComment[][] = [];
    for (const discussion of discussions) {
      const notes = (discussion.notes ?? []).filter((note) => !note.system);
      const anchor = notes.find((note) => note.position)?.position ?? null;
      if (anchor === null) {
        // A plain comment, or a thread on no line of the diff: comments, each on its own.
        comments.push(...notes.map((note) => commentOf(mr, note)));
      } else {
        // A thread on a line of the diff: its newest notes, each with where it points.
        threads.push(
          notes.slice(-SNAPSHOT_LIMITS.reviewThreadComments).map((note) => threadNoteOf(mr, discussion, note, anchor)),
        );
      }
    }
    const pipeline = await this.headPipelineOf(ref, mr);
    const checkRuns = pipeline?.status === 'failed' ? await this.failedJobs(ref.repository, pipeline) : [];
    return {
      ...summaryOf(ref, mr),
      baseBranch: mr.target_branch,
      checkRuns,
      checksState: pipelineState(pipeline?.status ?? null),
      comments: comments.slice(-SNAPSHOT_LIMITS.comments),
      headBranch: mr.source_branch,
      kind: 'snapshot',
      reviewComments: threads.slice(-SNAPSHOT_LIMITS.reviewThreads).flat(),
      reviews: [],
      statuses: [],
      title: mr.title,
      url: mr.web_url,
    };
  }

  /**
   * The MR's head pipeline when it ran on the current head: GitLab keeps the last one after a push
   * that ran none (`[ci skip]`, rules), which is not this head's. A merged-results or merge-train
   * pipeline ran on a merge commit: it counts when that commit's parents include the head.
   */
  private async headPipelineOf(ref: PullRequestRef, mr: GitLabMergeRequest): Promise<GitLabPipeline | null> {
    const pipeline = mr.head_pipeline ?? null;
    if (pipeline === null || mr.sha === null || pipeline.sha === mr.sha) {
      return pipeline;
    }
    if (!new RegExp(`^refs/merge-requests/${mr.iid}/(merge|train)$`).test(pipeline.ref ?? '')) {
      return null;
    }
    const commit = await this.http
      .json<{ parent_ids?: string[] }>(
        'GET',
        `/projects/${encodeProject(ref.repository)}/repository/commits/${encodeURIComponent(pipeline.sha)}`,
      )
      .catch((err: unknown) => {
        // A merge commit GitLab no longer has is no head's; any other failure fails this look (read again next).
        if (err instanceof ForgeError && err.code === 'not_found') {
          return null;
        }
        throw err;
      });
    return commit?.parent_ids?.includes(mr.sha) === true ? pipeline : null;
  }

  /**
   * The failed jobs of a pipeline (those allowed to fail left out), the first few with their logs'
   * tails; a pipeline that failed with none of its own (a child or downstream pipeline failed) as itself.
   */
  private async failedJobs(project: string, pipeline: GitLabPipeline): Promise<CheckRun[]> {
    const jobs = await this.http.json<GitLabJob[]>(
      'GET',
      `/projects/${encodeProject(project)}/pipelines/${pipeline.id}/jobs`,
      { query: { per_page: '100', 'scope[]': 'failed' } },
    );
    const failed = jobs.filter((job) => job.status === 'failed' && !job.allow_failure);
    if (failed.length === 0) {
      return [
        {
          conclusion: 'FAILURE',
          id: pipeline.id,
          name: `pipeline #${pipeline.id}`,
          status: 'COMPLETED',
          url: pipeline.web_url ?? '',
        },
      ];
    }
    const runs: CheckRun[] = [];
    for (const [index, job] of failed.entries()) {
      let logTail: string | undefined;
      if (index < FAILED_JOBS_WITH_LOGS) {
        try {
          logTail = await this.jobLogs.tail(project, job.id);
        } catch (err) {
          // The failure is told without its log rather than not at all.
          this.logger.warn({ error: (err as Error).message, jobId: job.id, msg: 'GitLab job log not read' });
        }
      }
      runs.push({
        conclusion: 'FAILURE',
        id: job.id,
        logTail,
        name: job.name,
        status: 'COMPLETED',
        url: job.web_url,
      });
    }
    return runs;
  }
}
