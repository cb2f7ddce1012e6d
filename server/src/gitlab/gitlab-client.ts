// The manager's only door to GitLab (issue 49 §5): REST API v4 over fetch, for gitlab.com and
// self-hosted instances alike. GitLab has no GraphQL batch the way GitHub's reconciler uses one,
// and its REST limits are per minute and generous (2,000 authenticated requests a minute on
// gitlab.com), so a merge request is read with one request for its summary and a few for its
// snapshot. The client adds what fetch does not: a timeout per attempt, retries of 5xx and network
// failures with growing jittered pauses, GitLab's rate-limit headers honoured (a 429 waits out a
// short Retry-After, a long one fails with when to come back, and a spent budget is not spent
// again), pagination by `x-next-page`, and one error type (ForgeError) for callers.
import { Logger } from '@nestjs/common';

import type { PullRequestStatus } from '@libs/contracts';

import { ForgeError } from '../forges/forge.errors';
import { LOG_TAIL_LINES } from '../forges/forge-triggers';
import {
  type CheckRun,
  type IssueComment,
  type Mergeable,
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
import type { ForgeIssue, ForgeIssueComment, IssueForge, IssueQuery, RepositoryComment } from '../forges/forge-issues';
import type { PullRequestForge } from '../forges/pull-request-forge';
import { fetchWithTimeout } from '../github/fetch-with-timeout';
import { rootCause } from '../github/github.errors';
import { type GitLabToken, resolveGitLabToken } from './gitlab-token';
import type {
  GitLabDiscussion,
  GitLabIssue,
  GitLabPipeline,
  GitLabJob,
  GitLabLabelEvent,
  GitLabMember,
  GitLabMergeRequest,
  GitLabNote,
  GitLabUser,
} from './gitlab.types';

export const GITLAB_API_URL = 'https://gitlab.com/api/v4';
/** Nest injection token of the GitLab client. */
export const GITLAB_CLIENT = Symbol('GitLabClient');

export interface GitLabClientOptions {
  baseUrl?: string;
  token: string | null;
  timeoutMs?: number;
  retries?: number;
  retryBaseDelayMs?: number;
  /** A 429 whose Retry-After is longer than this fails with `rate_limited` instead of waiting. */
  maxRateLimitWaitMs?: number;
}

const DEFAULTS = { maxRateLimitWaitMs: 10_000, retries: 2, retryBaseDelayMs: 500, timeoutMs: 20_000 };
/** Failed jobs whose logs are read per pipeline: the first few say what broke. */
const FAILED_JOBS_WITH_LOGS = 5;
/** The tail handed to the agent is at most this many characters, whatever the lines are. */
const LOG_TAIL_CHARS = 4_000;
/** Of a job's log only this much of its end is held while it streams in. */
const LOG_KEEP_BYTES = 64 * 1024;
/** A job's log is read no further than this (a job can print without end). */
const LOG_READ_BYTES = 20 * 1024 * 1024;
/** Said after a log whose reading stopped before its end (its size or its slowness). */
const LOG_CUT = '[… the log was cut here, before its end: read the rest on GitLab]';
/** Job log tails remembered (a finished job's log does not change). */
const LOG_CACHE_SIZE = 200;
/** Pages of discussions read per merge request (100 each): the newest are kept from these. */
const DISCUSSION_PAGES = 5;
/** Terminal escapes (colours, cursor moves) in a job's log; built from its code so no control character sits in a literal. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');
/** C0 controls but tab and newline, DEL, C1 controls, bidirectional overrides and isolates (by code, as above). */
const INVISIBLE = new RegExp(
  `[${[
    [0x00, 0x08],
    [0x0b, 0x1f],
    [0x7f, 0x9f],
    [0x202a, 0x202e],
    [0x2066, 0x2069],
  ]
    .map(([from, to]) => `\\u${from.toString(16).padStart(4, '0')}-\\u${to.toString(16).padStart(4, '0')}`)
    .join('')}]`,
  'g',
);
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

/** GitLab's access levels from which a label counts for intake: Reporter (20) may triage issues. */
const TRIAGE_ACCESS = 20;
/** Pages of an issue's notes read per call (100 each); `more` says when there were others. */
const NOTE_PAGES = 20;
/** Pages of an issue's label events read (100 each): a label war beyond that is rare. */
const LABEL_EVENT_PAGES = 3;

export class GitLabClient implements PullRequestForge, IssueForge {
  readonly kind = 'gitlab' as const;
  private readonly logger = new Logger(GitLabClient.name);
  private readonly settings: typeof DEFAULTS;
  private readonly token: string | null;
  private readonly fetch: typeof fetch;
  readonly configured: boolean;
  readonly baseUrl: string;
  /** Where the token came from, when built by createGitLabClient. */
  tokenSource: GitLabToken['source'] | null = null;
  /** The last figures GitLab reported: a spent budget is not asked again before it resets. */
  private limit: { remaining: number; resetAt: number } | null = null;
  private ownLogin: Promise<string> | null = null;
  /** Finished jobs' log tails, by `project#job`. */
  private readonly logTails = new Map<string, string>();

  constructor(options: GitLabClientOptions) {
    this.settings = {
      maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? DEFAULTS.maxRateLimitWaitMs,
      retries: options.retries ?? DEFAULTS.retries,
      retryBaseDelayMs: options.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs,
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    };
    this.token = options.token || null;
    this.configured = this.token !== null;
    this.baseUrl = (options.baseUrl ?? GITLAB_API_URL).replace(/\/+$/, '');
    this.fetch = fetchWithTimeout(this.settings.timeoutMs);
  }

  /** The web root projects live under: the API's root without `/api/v4`. */
  private get webRoot(): string {
    return this.baseUrl.replace(/\/api\/v4$/, '');
  }

  budget(): { remaining: number; resetAt: string } | null {
    return this.limit && { remaining: this.limit.remaining, resetAt: new Date(this.limit.resetAt).toISOString() };
  }

  login(): Promise<string> {
    this.ownLogin ??= this.json<GitLabUser>('GET', '/user').then((user) => user.username);
    this.ownLogin.catch(() => (this.ownLogin = null)); // asked again next time
    return this.ownLogin;
  }

  async getIssue(repository: string, number: number): Promise<ForgeIssue> {
    return issueOf(await this.json<GitLabIssue>('GET', `/projects/${encodeProject(repository)}/issues/${number}`));
  }

  async listIssues(repository: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }> {
    const { items, next } = await this.page<GitLabIssue>(`/projects/${encodeProject(repository)}/issues`, {
      order_by: 'created_at',
      page: String(query.page),
      per_page: String(query.perPage),
      sort: 'desc',
      state: query.state === 'open' ? 'opened' : query.state,
      ...(query.labels.length > 0 && { labels: query.labels.join(',') }),
      ...(query.q !== null && { search: query.q }),
    });
    return { hasNext: next !== '', items: items.map(issueOf) };
  }

  async listIssuesUpdatedSince(
    repository: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }> {
    const { items, next } = await this.page<GitLabIssue>(`/projects/${encodeProject(repository)}/issues`, {
      order_by: 'updated_at',
      page: String(page),
      per_page: '100',
      sort: 'asc',
      state: 'all',
      updated_after: since,
    });
    const issues = items.map(issueOf);
    return { hasNext: next !== '', items: issues, lastUpdatedAt: issues.at(-1)?.updatedAt ?? null };
  }

  async listIssueComments(
    repository: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }> {
    const { comments, more } = await this.notes(repository, number, null, max);
    return { comments, more };
  }

  async listIssueCommentsSince(
    repository: string,
    number: number,
    since: string,
    max: number,
  ): Promise<ForgeIssueComment[]> {
    return (await this.notes(repository, number, since, max)).comments;
  }

  /**
   * GitLab has no list of a project's notes: the issues asked for are read one by one. What is
   * answered is complete up to its last comment: when an issue's read stopped at `max`, only the
   * comments up to the earliest such stop are, and `more` says the rest comes next time.
   */
  async listCommentsSince(
    repository: string,
    numbers: readonly number[],
    since: string,
    max: number,
  ): Promise<{ comments: RepositoryComment[]; more: boolean }> {
    const all: RepositoryComment[] = [];
    let complete: number | null = null;
    for (const number of numbers) {
      const read = await this.notes(repository, number, since, max);
      all.push(...read.comments.map((comment) => ({ ...comment, issueNumber: number })));
      const last = Date.parse(read.comments.at(-1)?.updatedAt ?? since);
      if (read.more && (complete === null || last < complete)) {
        complete = last;
      }
    }
    const at = (comment: RepositoryComment) => Date.parse(comment.updatedAt);
    const sorted = all.sort((a, b) => at(a) - at(b) || a.id - b.id);
    return complete === null
      ? { comments: sorted, more: false }
      : { comments: sorted.filter((comment) => at(comment) <= complete), more: true };
  }

  async intakeLabeler(
    repository: string,
    number: number,
    labels: readonly string[],
    trustedCache: Map<string, boolean>,
  ): Promise<{ login: string | null; trusted: boolean }> {
    const project = encodeProject(repository);
    const events: GitLabLabelEvent[] = [];
    let page = '1';
    for (let read = 0; read < LABEL_EVENT_PAGES && page !== ''; read++) {
      const answer = await this.page<GitLabLabelEvent>(`/projects/${project}/issues/${number}/resource_label_events`, {
        page,
        per_page: '100',
      });
      events.push(...answer.items);
      page = answer.next;
    }
    // Per wanted label, its last event: the label counts when that is an add (it is still there).
    const last = new Map<string, GitLabLabelEvent>();
    for (const event of events) {
      const name = event.label?.name?.toLowerCase();
      if (name !== undefined && labels.some((label) => label.toLowerCase() === name)) {
        last.set(name, event);
      }
    }
    const added = [...last.values()].filter((event) => event.action === 'add' && event.user !== null).at(-1);
    const user = added?.user ?? null;
    if (user === null) {
      return { login: null, trusted: false };
    }
    const cached = trustedCache.get(user.username);
    if (cached !== undefined) {
      return { login: user.username, trusted: cached };
    }
    const trusted = await this.mayTriage(project, user);
    trustedCache.set(user.username, trusted);
    return { login: user.username, trusted };
  }

  /** Reporter or more of the project, and no bot (GitLab's flag, or a project or group bot's name when a private profile hides it). */
  private async mayTriage(project: string, user: GitLabUser): Promise<boolean> {
    const account = await this.json<GitLabUser>('GET', `/users/${user.id}`);
    if (account.bot === true || /^(project|group)_\d+_bot(_|$)/.test(user.username)) {
      return false;
    }
    try {
      const member = await this.json<GitLabMember>('GET', `/projects/${project}/members/all/${user.id}`);
      return member.access_level >= TRIAGE_ACCESS;
    } catch (err) {
      if (err instanceof ForgeError && err.code === 'not_found') {
        return false; // not a member at all
      }
      throw err;
    }
  }

  async commentOnIssue(repository: string, number: number, body: string): Promise<unknown> {
    return this.json('POST', `/projects/${encodeProject(repository)}/issues/${number}/notes`, { body: { body } });
  }

  async closeIssue(repository: string, number: number): Promise<void> {
    await this.json('PUT', `/projects/${encodeProject(repository)}/issues/${number}`, {
      body: { state_event: 'close' },
    });
  }

  /**
   * An issue's notes, GitLab's own system notes left out, oldest first. Without `since`: the first
   * ones by creation. With `since`: those updated at or after it, read newest first (GitLab's notes
   * take no `since`) back to it, so a long history before it costs nothing; at most `max`, the
   * oldest of them (`more`: there were others). A history past NOTE_PAGES newer than `since` is
   * read from its newest end and the older rest left (said in the log), never stuck on.
   */
  private async notes(
    repository: string,
    number: number,
    since: string | null,
    max: number,
  ): Promise<{ comments: Array<ForgeIssueComment & { updatedAt: string }>; more: boolean }> {
    const url = `${this.webRoot}/${repository}/-/issues/${number}`;
    const from = since === null ? null : Date.parse(since);
    const comments: Array<ForgeIssueComment & { updatedAt: string }> = [];
    let page = '1';
    let reachedSince = false;
    for (let read = 0; read < NOTE_PAGES && page !== '' && !reachedSince; read++) {
      const answer = await this.page<GitLabNote>(`/projects/${encodeProject(repository)}/issues/${number}/notes`, {
        order_by: from === null ? 'created_at' : 'updated_at',
        page,
        per_page: '100',
        sort: from === null ? 'asc' : 'desc',
      });
      for (const note of answer.items) {
        const updatedAt = note.updated_at ?? note.created_at;
        if (from !== null && Date.parse(updatedAt) < from) {
          reachedSince = true;
          break;
        }
        if (!note.system) {
          comments.push({
            author: note.author?.username ?? null,
            body: note.body ?? '',
            createdAt: note.created_at,
            id: note.id,
            updatedAt,
            url: `${url}#note_${note.id}`,
          });
        }
        if (from === null && comments.length > max) {
          return { comments: comments.slice(0, max), more: true };
        }
      }
      page = answer.next;
    }
    if (from !== null && !reachedSince && page !== '') {
      this.logger.warn({
        issue: `${repository}#${number}`,
        msg: 'GitLab notes past the read limit left unread',
        since,
      });
    }
    if (from === null) {
      return { comments, more: page !== '' };
    }
    const oldestFirst = comments.reverse();
    return { comments: oldestFirst.slice(0, max), more: oldestFirst.length > max };
  }

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
    return this.json<GitLabMergeRequest>('GET', `/projects/${encodeProject(project)}/merge_requests/${iid}`);
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
      const mr = await this.json<GitLabMergeRequest>('POST', path, {
        body: { description: input.body, source_branch: input.head, target_branch: input.base, title: input.title },
      });
      // The answer to a create carries no pipeline and may lack the head: read it as the reconciler will.
      return { created: true, pullRequest: restFieldsOf(project, await this.mergeRequest(project, mr.iid)) };
    } catch (err) {
      if (!(err instanceof ForgeError && err.details.status === 409)) {
        throw err;
      }
      const [open] = await this.json<GitLabMergeRequest[]>('GET', path, {
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
    return this.token === null
      ? null
      : `Authorization: Basic ${Buffer.from(`oauth2:${this.token}`).toString('base64')}`;
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
    const discussions = await this.newestPages<GitLabDiscussion>(
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
    const commit = await this.json<{ parent_ids?: string[] }>(
      'GET',
      `/projects/${encodeProject(ref.repository)}/repository/commits/${encodeURIComponent(pipeline.sha)}`,
    ).catch((err: unknown) => {
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
    const jobs = await this.json<GitLabJob[]>(
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
          logTail = await this.logTail(project, job.id);
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

  /** One page of a list, and GitLab's `x-next-page` ('' on the last). */
  private async page<T>(path: string, query: Record<string, string>): Promise<{ items: T[]; next: string }> {
    const response = await this.request('GET', path, { query });
    return { items: await parseJson<T[]>(response), next: response.headers.get('x-next-page') ?? '' };
  }

  /**
   * The items of the newest `maxPages` pages of 100 of an oldest-first list, oldest first: the
   * first page says how many there are (`x-total-pages`), then the last ones are read.
   */
  private async newestPages<T>(path: string, maxPages: number): Promise<T[]> {
    const first = await this.request('GET', path, { query: { page: '1', per_page: '100' } });
    const items = await parseJson<T[]>(first);
    const total = Number(first.headers.get('x-total-pages') ?? NaN);
    let next = first.headers.get('x-next-page') ?? '';
    let read = 1;
    if (Number.isSafeInteger(total) && total > maxPages) {
      items.length = 0; // the oldest page is not among the newest
      next = String(total - maxPages + 1);
      read = 0;
    }
    for (; read < maxPages && next !== ''; read++) {
      const answer = await this.page<T>(path, { page: next, per_page: '100' });
      items.push(...answer.items);
      next = answer.next;
    }
    return items;
  }

  /**
   * The tail of a job's log, streamed: only the last LOG_KEEP_BYTES are held however long the log
   * is, reading stops after LOG_READ_BYTES (a log that long is told as cut), and a finished job's
   * tail is remembered (its log does not change), so a busy MR does not read it again each look.
   */
  private async logTail(project: string, jobId: number): Promise<string> {
    const cacheKey = `${project.toLowerCase()}#${jobId}`;
    const cached = this.logTails.get(cacheKey);
    if (cached !== undefined) {
      return cached;
    }
    if (this.limit && this.limit.remaining <= 0 && this.limit.resetAt > Date.now()) {
      throw new ForgeError('rate_limited', 'GitLab rate limit spent: the job log is read after it resets');
    }
    const url = `${this.baseUrl}/projects/${encodeProject(project)}/jobs/${jobId}/trace`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.settings.timeoutMs);
    let kept = Buffer.alloc(0);
    let read = 0;
    try {
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${this.token ?? ''}` },
        signal: controller.signal,
      });
      this.observeBudget(response.headers);
      if (!response.ok || response.body === null) {
        throw new ForgeError('failed', `GitLab answered ${response.status} for the job's log`, {
          status: response.status,
        });
      }
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        read += value.byteLength;
        kept = Buffer.concat([kept, value]);
        if (kept.length > LOG_KEEP_BYTES) {
          kept = kept.subarray(kept.length - LOG_KEEP_BYTES);
        }
        if (read >= LOG_READ_BYTES) {
          await reader.cancel();
          break;
        }
      }
    } catch (err) {
      if (controller.signal.aborted && kept.length > 0) {
        // Too slow to send whole: what came is told (and remembered, so the next look does not wait again).
        return this.remember(cacheKey, `${tailOf(kept.toString('utf8'))}\n${LOG_CUT}`);
      }
      throw err instanceof ForgeError
        ? err
        : controller.signal.aborted
          ? new ForgeError('timeout', `GitLab did not send the job's log within ${this.settings.timeoutMs} ms`)
          : new ForgeError('network', `GitLab unreachable: ${rootCause(err)}`);
    } finally {
      clearTimeout(timer);
    }
    return this.remember(cacheKey, tailOf(kept.toString('utf8')) + (read >= LOG_READ_BYTES ? `\n${LOG_CUT}` : ''));
  }

  private remember(cacheKey: string, tail: string): string {
    this.logTails.set(cacheKey, tail);
    if (this.logTails.size > LOG_CACHE_SIZE) {
      this.logTails.delete(this.logTails.keys().next().value!);
    }
    return tail;
  }

  private async json<T>(
    method: string,
    path: string,
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<T> {
    return parseJson<T>(await this.request(method, path, options));
  }

  /** One call with retries; answers a 2xx response or throws ForgeError (messages never carry the token). */
  private async request(
    method: string,
    path: string,
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<Response> {
    if (!this.token) {
      throw new ForgeError('not_configured', 'no GitLab token (GITLAB_TOKEN or `glab auth login`)');
    }
    if (this.limit && this.limit.remaining <= 0 && this.limit.resetAt > Date.now()) {
      throw new ForgeError('rate_limited', 'GitLab rate limit spent: not asked again before it resets', {
        resetAt: new Date(this.limit.resetAt).toISOString(),
      });
    }
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      url.searchParams.append(key, value);
    }
    // POSTs are not re-sent after a 5xx: GitLab may have done the write (an MR opened twice).
    const retries = method === 'GET' ? this.settings.retries : 0;
    let waitedForLimit = false;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetch(url, {
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          headers: {
            accept: 'application/json',
            authorization: `Bearer ${this.token}`,
            ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          method,
        });
      } catch (err) {
        const timedOut = (err as Error).name === 'AbortError';
        if (attempt < retries) {
          await this.pause(attempt);
          continue;
        }
        throw timedOut
          ? new ForgeError('timeout', `GitLab did not answer within ${this.settings.timeoutMs} ms`)
          : new ForgeError('network', `GitLab unreachable: ${rootCause(err)}`);
      }
      this.observeBudget(response.headers);
      if (response.ok) {
        return response;
      }
      const status = response.status;
      const message = await messageOf(response);
      if (status === 429) {
        const retryAfterMs = Number(response.headers.get('retry-after') ?? NaN) * 1000;
        if (!waitedForLimit && Number.isFinite(retryAfterMs) && retryAfterMs <= this.settings.maxRateLimitWaitMs) {
          waitedForLimit = true;
          await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
          continue;
        }
        const resetAt = this.limit?.resetAt ?? (Number.isFinite(retryAfterMs) ? Date.now() + retryAfterMs : undefined);
        throw new ForgeError('rate_limited', `GitLab rate limit: ${message}`, {
          resetAt: resetAt === undefined ? undefined : new Date(resetAt).toISOString(),
          retryAfterMs: Number.isFinite(retryAfterMs) ? retryAfterMs : undefined,
          status,
        });
      }
      if (status >= 500 && attempt < retries) {
        await this.pause(attempt);
        continue;
      }
      if (status === 401) {
        throw new ForgeError('unauthorized', 'GitLab rejected the token (401)', { status });
      }
      if (status === 403) {
        throw new ForgeError('forbidden', `GitLab refused access (403): ${message}`, { status });
      }
      if (status === 404) {
        throw new ForgeError('not_found', `GitLab found nothing there (404): ${message}`, { status });
      }
      throw new ForgeError('failed', `GitLab request failed (${status}): ${message}`, { status });
    }
  }

  private observeBudget(headers: Headers): void {
    const remaining = Number(headers.get('ratelimit-remaining') ?? NaN);
    const reset = Number(headers.get('ratelimit-reset') ?? NaN);
    if (Number.isFinite(remaining) && Number.isFinite(reset)) {
      this.limit = { remaining, resetAt: reset * 1000 };
    }
  }

  private pause(attempt: number): Promise<void> {
    const ms = this.settings.retryBaseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

function issueOf(issue: GitLabIssue): ForgeIssue {
  return {
    author: issue.author?.username ?? null,
    authorAssociation: 'NONE',
    body: issue.description ?? '',
    commentCount: issue.user_notes_count ?? 0,
    createdAt: issue.created_at,
    labels: issue.labels ?? [],
    number: issue.iid,
    pullRequest: false,
    state: issue.state === 'opened' ? 'open' : 'closed',
    title: issue.title,
    updatedAt: issue.updated_at,
    url: issue.web_url,
  };
}

/** GitLab addresses a project by its URL-encoded full path (`group%2Fsub%2Fproject`). */
export function encodeProject(path: string): string {
  return encodeURIComponent(path);
}

function statusOf(mr: GitLabMergeRequest): {
  state: PullRequestSnapshot['state'];
  status: PullRequestStatus;
  isDraft: boolean;
} {
  const isDraft = mr.draft === true || mr.work_in_progress === true;
  // `locked` is an MR being merged right now: still open until GitLab says merged.
  const state = mr.state === 'merged' ? 'merged' : mr.state === 'opened' || mr.state === 'locked' ? 'open' : 'closed';
  return { isDraft, state, status: state === 'open' ? (isDraft ? 'draft' : 'open') : state };
}

/** GitLab computes mergeability after a push: `checking`/`unchecked` until it knows. */
function mergeableOf(mr: GitLabMergeRequest): Mergeable {
  // Before GitLab 15.6 there is no detailed status: `cannot_be_merged` then means conflicts.
  if (
    mr.has_conflicts === true ||
    mr.detailed_merge_status === 'conflict' ||
    (mr.detailed_merge_status === undefined && mr.merge_status === 'cannot_be_merged')
  ) {
    return 'CONFLICTING';
  }
  const status = mr.detailed_merge_status ?? mr.merge_status ?? '';
  return ['checking', 'unchecked', 'cannot_be_merged_recheck', 'preparing', 'approvals_syncing'].includes(status)
    ? 'UNKNOWN'
    : 'MERGEABLE';
}

function pipelineState(status: string | null): PullRequestSnapshot['checksState'] {
  switch (status) {
    case null:
      return null;
    case 'success':
      return 'SUCCESS';
    case 'failed':
      return 'FAILURE';
    case 'canceled':
      return 'ERROR';
    default:
      return 'PENDING';
  }
}

function summaryOf(ref: PullRequestRef, mr: GitLabMergeRequest): PullRequestSummary {
  const { isDraft, state, status } = statusOf(mr);
  const mergeable = mergeableOf(mr);
  const pipeline = mr.head_pipeline ?? null;
  return {
    fingerprint: JSON.stringify([
      state,
      isDraft,
      mr.sha,
      mergeable,
      mr.user_notes_count ?? null,
      mr.updated_at,
      pipeline ? [pipeline.id, pipeline.sha, pipeline.status] : null,
    ]),
    headSha: mr.sha ?? '',
    isDraft,
    kind: 'summary',
    mergeable,
    number: mr.iid,
    ref,
    repository: ref.repository,
    state,
    status,
    updatedAt: mr.updated_at,
  };
}

function restFieldsOf(repository: string, mr: GitLabMergeRequest): RestPullRequestFields {
  const { isDraft, state, status } = statusOf(mr);
  return {
    baseBranch: mr.target_branch,
    headBranch: mr.source_branch,
    headSha: mr.sha ?? '',
    isDraft,
    mergeable: mergeableOf(mr) === 'UNKNOWN' ? null : mergeableOf(mr) === 'MERGEABLE',
    mergeableState: mr.detailed_merge_status ?? mr.merge_status ?? 'unknown',
    number: mr.iid,
    repository,
    state,
    status,
    title: mr.title,
    updatedAt: mr.updated_at,
    url: mr.web_url,
  };
}

function commentOf(mr: GitLabMergeRequest, note: GitLabNote): IssueComment {
  return {
    author: note.author?.username ?? null,
    authorAssociation: 'NONE',
    body: note.body ?? '',
    createdAt: note.created_at,
    databaseId: note.id,
    id: String(note.id),
    url: `${mr.web_url}#note_${note.id}`,
  };
}

function threadNoteOf(
  mr: GitLabMergeRequest,
  discussion: GitLabDiscussion,
  note: GitLabNote,
  anchor: GitLabNote['position'] | null,
): ReviewThreadComment {
  const position = note.position ?? anchor;
  return {
    ...commentOf(mr, note),
    line: position?.new_line ?? position?.old_line ?? null,
    path: position?.new_path ?? position?.old_path ?? '(discussion)',
    threadId: discussion.id,
  };
}

/**
 * The end of a job's log as the agent gets it: GitLab's section markers and terminal escapes
 * removed (they are noise to a model), the last LOG_TAIL_LINES lines, at most LOG_TAIL_CHARS.
 */
export function tailOf(log: string): string {
  const clean = log
    .replace(ANSI_ESCAPE, '')
    .replace(/section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]]*\])?\r?/g, '')
    .replace(/\r(?!\n)/g, '\n');
  // Other control characters go too (tab and newline stay), C1 controls and bidirectional
  // overrides with them: a log must not steer a terminal nor hide text from the person reading it.
  const printable = clean.replace(INVISIBLE, '');
  const lines = printable.replace(/\n+$/, '').split('\n').slice(-LOG_TAIL_LINES).join('\n');
  return lines.length > LOG_TAIL_CHARS ? `…${lines.slice(-LOG_TAIL_CHARS)}` : lines;
}

async function parseJson<T>(response: Response): Promise<T> {
  try {
    return (await response.json()) as T;
  } catch {
    throw new ForgeError('failed', `GitLab answered ${response.status} with a body that is not JSON`, {
      status: response.status,
    });
  }
}

/** GitLab's error text (`{"message": …}` or `{"error": …}`), cut short; never the request's headers. */
async function messageOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown };
    const value = body.message ?? body.error ?? text;
    return (typeof value === 'string' ? value : JSON.stringify(value)).slice(0, 300);
  } catch {
    return text.slice(0, 300) || response.statusText;
  }
}
