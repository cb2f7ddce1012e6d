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
import type { PullRequestForge } from '../forges/pull-request-forge';
import { fetchWithTimeout } from '../github/fetch-with-timeout';
import { rootCause } from '../github/github.errors';
import { type GitLabToken, resolveGitLabToken } from './gitlab-token';
import type { GitLabDiscussion, GitLabJob, GitLabMergeRequest, GitLabNote } from './gitlab.types';

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
/** The tail handed to the agent is at most this long, whatever the lines are. */
const LOG_TAIL_BYTES = 4_000;
/** Pages of discussions read per merge request (100 each): the newest are kept from these. */
const DISCUSSION_PAGES = 5;
/** Terminal escapes (colours, cursor moves) in a job's log; built from its code so no control character sits in a literal. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');
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

export class GitLabClient implements PullRequestForge {
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
  private budget: { remaining: number; resetAt: number } | null = null;

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

  /** The web host projects live on (the API's own host): where a remote or an MR URL must point. */
  get webHost(): string {
    return new URL(this.baseUrl).host.toLowerCase();
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
    const discussions = await this.pages<GitLabDiscussion>(
      `/projects/${project}/merge_requests/${ref.number}/discussions`,
      DISCUSSION_PAGES,
    );
    const comments: IssueComment[] = [];
    const threads: ReviewThreadComment[][] = [];
    for (const discussion of discussions) {
      const notes = (discussion.notes ?? []).filter((note) => !note.system);
      const positioned = notes.some((note) => note.position);
      if (discussion.individual_note && !positioned) {
        comments.push(...notes.map((note) => commentOf(mr, note)));
      } else if (notes.length > 0) {
        // A thread (on a diff line, or started as one): its newest notes, each with where it points.
        const anchor = notes.find((note) => note.position)?.position ?? null;
        threads.push(
          notes.slice(-SNAPSHOT_LIMITS.reviewThreadComments).map((note) => threadNoteOf(mr, discussion, note, anchor)),
        );
      }
    }
    const pipeline = mr.head_pipeline && mr.head_pipeline.sha === mr.sha ? mr.head_pipeline : null;
    const checkRuns = pipeline?.status === 'failed' ? await this.failedJobs(ref.repository, pipeline.id) : [];
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

  /** The failed jobs of a pipeline (those allowed to fail left out), the first few with their logs' tails. */
  private async failedJobs(project: string, pipelineId: number): Promise<CheckRun[]> {
    const jobs = await this.json<GitLabJob[]>(
      'GET',
      `/projects/${encodeProject(project)}/pipelines/${pipelineId}/jobs`,
      { query: { per_page: '100', 'scope[]': 'failed' } },
    );
    const failed = jobs.filter((job) => job.status === 'failed' && !job.allow_failure);
    const runs: CheckRun[] = [];
    for (const [index, job] of failed.entries()) {
      let logTail: string | undefined;
      if (index < FAILED_JOBS_WITH_LOGS) {
        try {
          logTail = tailOf(await this.text(`/projects/${encodeProject(project)}/jobs/${job.id}/trace`));
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

  /** Every item of up to `maxPages` pages of 100, following GitLab's `x-next-page`. */
  private async pages<T>(path: string, maxPages: number): Promise<T[]> {
    const items: T[] = [];
    let page = '1';
    for (let read = 0; read < maxPages && page !== ''; read++) {
      const response = await this.request('GET', path, { query: { page, per_page: '100' } });
      items.push(...(await parseJson<T[]>(response)));
      page = response.headers.get('x-next-page') ?? '';
    }
    return items;
  }

  private async json<T>(
    method: string,
    path: string,
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<T> {
    return parseJson<T>(await this.request(method, path, options));
  }

  private async text(path: string): Promise<string> {
    return (await this.request('GET', path)).text();
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
    if (this.budget && this.budget.remaining <= 0 && this.budget.resetAt > Date.now()) {
      throw new ForgeError('rate_limited', 'GitLab rate limit spent: not asked again before it resets', {
        resetAt: new Date(this.budget.resetAt).toISOString(),
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
        const resetAt = this.budget?.resetAt ?? (Number.isFinite(retryAfterMs) ? Date.now() + retryAfterMs : undefined);
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
      this.budget = { remaining, resetAt: reset * 1000 };
    }
  }

  private pause(attempt: number): Promise<void> {
    const ms = this.settings.retryBaseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
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
  const state = mr.state === 'merged' ? 'merged' : mr.state === 'opened' ? 'open' : 'closed';
  return { isDraft, state, status: state === 'open' ? (isDraft ? 'draft' : 'open') : state };
}

/** GitLab computes mergeability after a push: `checking`/`unchecked` until it knows. */
function mergeableOf(mr: GitLabMergeRequest): Mergeable {
  if (mr.has_conflicts === true || mr.detailed_merge_status === 'conflict') {
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
    line: position?.new_line ?? null,
    path: position?.new_path ?? position?.old_path ?? '(discussion)',
    threadId: discussion.id,
  };
}

/**
 * The end of a job's log as the agent gets it: GitLab's section markers and terminal escapes
 * removed (they are noise to a model), the last LOG_TAIL_LINES lines, at most LOG_TAIL_BYTES.
 */
export function tailOf(log: string): string {
  const clean = log
    .replace(ANSI_ESCAPE, '')
    .replace(/section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]]*\])?\r?/g, '')
    .replace(/\r(?!\n)/g, '\n');
  // Other control characters go too (tab and newline stay): a log must not steer a terminal.
  const printable = [...clean].filter((c) => c >= ' ' || c === '\n' || c === '\t').join('');
  const lines = printable.replace(/\n+$/, '').split('\n').slice(-LOG_TAIL_LINES).join('\n');
  return lines.length > LOG_TAIL_BYTES ? `…${lines.slice(-LOG_TAIL_BYTES)}` : lines;
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
