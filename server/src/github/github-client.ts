// The manager's only door to GitHub. Octokit does the HTTP (auth, URLs, error types) with two
// official plugins: plugin-retry re-sends 5xx answers and network failures with growing, jittered
// pauses; plugin-throttling honours secondary rate limits (403/429 "secondary rate limit" +
// Retry-After) and primary exhaustion (x-ratelimit-remaining: 0 until x-ratelimit-reset), and
// spaces GraphQL requests (one at a time, ≥ 1 s apart, as GitHub asks of heavy clients). The
// client adds what neither plugin does: a per-attempt timeout, a pre-flight check of the last seen
// budget, a bound on how long it may wait for a reset, and one error type for callers.
//
// The Octokit packages are ES modules only. The compiled server `require()`s them natively (Node
// ≥ 20.19); their bundled typings resolve under `moduleResolution: node`; Jest transpiles them
// (see jest.config.js).
import { Logger } from '@nestjs/common';
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';

import type { ForgeIssue, ForgeIssueComment, IssueQuery } from '../forges/forge-issues';
import { fetchWithTimeout } from './fetch-with-timeout';
import { GitHubError, rootCause, toGitHubError } from './github.errors';
import { GitHubToken, resolveGitHubToken } from './github-token';
import {
  PullRequestFetchError,
  PullRequestRef,
  PullRequestResult,
  PullRequestSummary,
  RateLimitBudget,
  RateLimitStatus,
  RestPullRequestFields,
} from '../forges/forge.types';
import { BatchOptions, fetchInBatches } from './pull-request-batches';
import {
  BatchQuery,
  GraphQlError,
  RestPullRequest,
  buildPullRequestsQuery,
  parsePullRequestsResponse,
  toRestFields,
} from './pull-request-query';
import { buildPullRequestSummariesQuery, parsePullRequestSummariesResponse } from './pull-request-summary';

export const GITHUB_API_URL = 'https://api.github.com';
/** Issue pages whose ETags are kept (a few per repository polled). */
const PAGE_CACHE_SIZE = 200;
/** Nest injection token for the GitHubClient interface (interfaces do not exist at runtime). */
export const GITHUB_CLIENT = Symbol('GitHubClient');

/** What the manager asks of GitHub; the reconciler and review requests depend on this, not on Octokit. */
export interface GitHubClient {
  /** False when no token was found: every call then fails with GitHubError `not_configured`. */
  readonly configured: boolean;
  /**
   * Reads many pull requests with one GraphQL request per batch of `batchSize`, batches in turn.
   * Every distinct ref gets an entry under `pullRequestKey(ref)`: a snapshot, or an error for that
   * PR alone. A batch the server fails (5xx after retries) marks its PRs `failed`; a failure that
   * would hit every batch alike (rate limit, timeout, unreachable host, bad token) stops the call
   * and marks the PRs not yet read `skipped`, with `cause`. Throws only `not_configured`.
   */
  fetchPullRequests(refs: readonly PullRequestRef[]): Promise<Map<string, PullRequestResult>>;
  /**
   * The cheap change check: like fetchPullRequests (same keys, per-PR errors, failed and skipped
   * batches, throws only `not_configured`), but one request per `summaryBatchSize` PRs and only
   * scalars and counts per PR. Compare `fingerprint`s; fetch snapshots of the PRs whose changed.
   */
  fetchPullRequestSummaries(
    refs: readonly PullRequestRef[],
  ): Promise<Map<string, PullRequestSummary | PullRequestFetchError>>;
  /** One PR over REST, conditional on its ETag (a 304 is free and returns the cached fields). Throws GitHubError. */
  getPullRequest(owner: string, repo: string, number: number): Promise<RestPullRequestFields>;
  /**
   * One issue over REST (issue 49): a pull request answers too (GitHub's issues are both), with
   * `pullRequest: true`. Throws GitHubError (`not_found` for no such issue).
   */
  getIssue(owner: string, repo: string, number: number): Promise<ForgeIssue>;
  /** An issue's comments, oldest first, at most `max` (the first pages); `more`: there were others. Throws GitHubError. */
  listIssueComments(
    owner: string,
    repo: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }>;
  /**
   * A page of a repository's issues (pull requests left out), newest first: those matching `q`
   * through GitHub's search when there is one, else the issue list. Throws GitHubError.
   */
  listIssues(owner: string, repo: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }>;
  /**
   * A page of a repository's issues updated at or after `since` (GitHub's time), the oldest
   * change first, pull requests left out (`seen` counts every item of the page, pull requests
   * too, so a caller knows where the page ended). Conditional on the page's ETag: an unchanged
   * page (304) costs no budget and answers what it answered before. Throws GitHubError.
   */
  listIssuesUpdatedSince(
    owner: string,
    repo: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }>;
  /** An issue's comments written or edited at or after `since`, oldest first (at most `max`). Throws GitHubError. */
  listIssueCommentsSince(
    owner: string,
    repo: string,
    number: number,
    since: string,
    max: number,
  ): Promise<ForgeIssueComment[]>;
  /**
   * Who added the one of `labels` (case aside) that the issue still has, from its events (up to
   * 300, oldest first; a label removed and added again: the last adder); null when none is found.
   * Throws GitHubError.
   */
  lastLabeledBy(owner: string, repo: string, number: number, labels: readonly string[]): Promise<string | null>;
  /** `user`'s permission on the repository (admin, maintain, write, triage, read, none). Throws GitHubError. */
  permissionOf(owner: string, repo: string, user: string): Promise<string>;
  /** The token's own login (asked once). Throws GitHubError. */
  login(): Promise<string>;
  /**
   * The comments of every issue (and pull request) of a repository written or edited at or after
   * `since`, oldest change first, each with its issue's number (about `max` at most; `more`: it
   * stopped there). Throws GitHubError.
   */
  listRepositoryCommentsSince(
    owner: string,
    repo: string,
    since: string,
    max: number,
  ): Promise<{ comments: Array<ForgeIssueComment & { issueNumber: number; updatedAt: string }>; more: boolean }>;
  /** Writes a comment on an issue (or a pull request's conversation), never re-sent by the client. Throws GitHubError. */
  commentOnIssue(owner: string, repo: string, number: number, body: string): Promise<{ id: number; url: string }>;
  /** Closes an issue as completed (a closed one stays closed). Throws GitHubError. */
  closeIssue(owner: string, repo: string, number: number): Promise<void>;
  /** The budgets as last reported by GitHub's responses (no request). */
  rateLimit(): RateLimitStatus;
  /** Asks GitHub (`GET /rate_limit`, which costs nothing) and returns the fresh budgets. Throws GitHubError. */
  refreshRateLimit(): Promise<RateLimitStatus>;
  /**
   * Opens a pull request of `head` (a branch of the same repository) into `base`. When GitHub
   * answers that one is already open for that head (422), returns that one with `created: false`.
   * Throws GitHubError (a 422 for any other reason: `failed`, with GitHub's message).
   */
  createPullRequest(
    owner: string,
    repo: string,
    input: CreatePullRequestInput,
  ): Promise<{ pullRequest: RestPullRequestFields; created: boolean }>;
  /**
   * The header line (`Authorization: Basic …`, GitHub's `x-access-token` form) with which git
   * pushes over HTTPS with this token, for a push's `http.<url>.extraHeader`; null without a token.
   * The token itself never leaves the client otherwise.
   */
  gitAuthorization(): string | null;
}

export interface CreatePullRequestInput {
  title: string;
  body: string;
  /** The branch to merge, in the same repository. */
  head: string;
  base: string;
}

export interface GitHubClientOptions {
  /** Null: not configured. */
  token: string | null;
  /** REST root: https://api.github.com (default), or `https://<host>/api/v3` for GitHub Enterprise Server. */
  baseUrl?: string;
  /** PRs per GraphQL query (default 20): small enough for GitHub's node limit and timeouts. */
  batchSize?: number;
  /** PRs per summary query (default 100): scalars and counts only, so a batch stays at a few points. */
  summaryBatchSize?: number;
  /** Each HTTP attempt must complete (headers and body) within this (default 20 s). Timeouts are not retried. */
  timeoutMs?: number;
  /** Re-sends after a 5xx / network failure, and after a secondary rate limit (default 3). */
  retries?: number;
  /** Pause before retry n is base × n² × [0.5, 1) (jitter), default 500 ms. */
  retryBaseDelayMs?: number;
  /** Longest the client waits for a primary budget to reset before failing `rate_limited` (default 60 s). */
  maxRateLimitWaitMs?: number;
  /** Longest Retry-After honoured for a secondary limit before failing `rate_limited` (default 120 s). */
  maxRetryAfterMs?: number;
  /** ETags remembered for conditional REST requests (default 1,000 PRs). */
  etagCacheSize?: number;
}

const DEFAULTS = {
  batchSize: 20,
  etagCacheSize: 1_000,
  maxRateLimitWaitMs: 60_000,
  maxRetryAfterMs: 120_000,
  retries: 3,
  retryBaseDelayMs: 500,
  summaryBatchSize: 100,
  timeoutMs: 20_000,
};

// A 4xx is final, except 403/429 rate limits, which plugin-throttling handles (429 is listed so
// plugin-retry does not re-send it blindly, ignoring Retry-After).
const DO_NOT_RETRY = [400, 401, 403, 404, 410, 422, 429, 451];

const GitHubOctokit = Octokit.plugin(retry, throttling);
type GitHubOctokit = InstanceType<typeof GitHubOctokit>;

interface ResponseLike {
  status: number;
  headers: Record<string, string | number | undefined>;
  /** Whatever JSON GitHub answered: each caller states the shape it reads. */
  data: unknown;
}

/** Resolves the token (see resolveGitHubToken) and builds the client; `gh` is asked for GHES hosts too. */
export async function createGitHubClient(
  options: Omit<GitHubClientOptions, 'token'> & { env?: NodeJS.ProcessEnv; ghExecutable?: string } = {},
): Promise<OctokitGitHubClient> {
  const baseUrl = options.baseUrl ?? GITHUB_API_URL;
  const host = new URL(baseUrl).hostname;
  const token: GitHubToken | null = await resolveGitHubToken({
    env: options.env,
    ghExecutable: options.ghExecutable,
    hostname: host === 'api.github.com' ? undefined : host,
  });
  const client = new OctokitGitHubClient({ ...options, token: token?.token ?? null });
  client.tokenSource = token?.source ?? null;
  return client;
}

export class OctokitGitHubClient implements GitHubClient {
  private readonly logger = new Logger(OctokitGitHubClient.name);
  private readonly octokit: GitHubOctokit;
  private readonly settings: typeof DEFAULTS;
  private readonly graphqlBaseUrl: string;
  private readonly budgets: RateLimitStatus = { core: null, graphql: null };
  private readonly etags = new Map<string, { etag: string; fields: RestPullRequestFields }>();
  private ownLogin: Promise<string> | null = null;
  /** Issue pages polled with the same `since` until something changes: their ETags make the repeats free. */
  private readonly pages = new Map<
    string,
    { etag: string; value: { items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean } }
  >();
  readonly configured: boolean;
  readonly baseUrl: string;
  private readonly token: string | null;
  /** Where the token came from, when built by createGitHubClient. */
  tokenSource: GitHubToken['source'] | null = null;

  constructor(options: GitHubClientOptions) {
    const { baseUrl, token, ...tunables } = options;
    this.settings = { ...DEFAULTS, ...definedOnly(tunables) };
    this.configured = !!token;
    this.token = token || null;
    this.baseUrl = (baseUrl ?? GITHUB_API_URL).replace(/\/+$/, '');
    // GitHub Enterprise Server serves REST under /api/v3 and GraphQL at /api/graphql.
    this.graphqlBaseUrl = this.baseUrl.replace(/\/api\/v3$/, '/api');
    this.octokit = new GitHubOctokit({
      auth: token ?? undefined,
      baseUrl: this.baseUrl,
      // Octokit logs deprecations and plugin failures; requests and tokens never reach it.
      log: {
        debug: () => {},
        error: (m: string) => this.logger.error(m),
        info: () => {},
        warn: (m: string) => this.logger.warn(m),
      },
      request: { fetch: fetchWithTimeout(this.settings.timeoutMs) },
      retry: {
        doNotRetry: DO_NOT_RETRY,
        retries: this.settings.retries,
        retryAfterBaseValue: this.settings.retryBaseDelayMs,
      },
      throttle: {
        id: `agent-manager:${new URL(this.baseUrl).host}`,
        onRateLimit: (
          retryAfter: number,
          request: { method: string; url: string },
          _octokit: unknown,
          retryCount: number,
        ) =>
          this.mayWait(
            'primary rate limit',
            retryAfter,
            request,
            retryCount < 1 && retryAfter * 1000 <= this.settings.maxRateLimitWaitMs,
          ),
        onSecondaryRateLimit: (
          retryAfter: number,
          request: { method: string; url: string },
          _octokit: unknown,
          retryCount: number,
        ) =>
          this.mayWait(
            'secondary rate limit',
            retryAfter,
            request,
            retryCount < this.settings.retries && retryAfter * 1000 <= this.settings.maxRetryAfterMs,
          ),
      },
    });
    // plugin-retry pauses base × n² before retry n; `retryRequest` is its public hook for the
    // pause, so jitter is added there to keep clients that failed together from retrying together.
    const plugin = this.octokit.retry;
    const retryRequest = plugin.retryRequest.bind(plugin);
    plugin.retryRequest = (error, retries, retryAfter) => {
      const outcome = error.response ? `answered ${error.status}` : `failed (${rootCause(error)})`;
      this.logger.warn(`GitHub ${describe(error.request)} ${outcome}: retrying`);
      return retryRequest(error, retries, retryAfter * (0.5 + Math.random() / 2));
    };
  }

  async fetchPullRequests(refs: readonly PullRequestRef[]): Promise<Map<string, PullRequestResult>> {
    this.assertConfigured();
    return fetchInBatches(refs, this.batching(this.settings.batchSize, 'pull requests'), (batch) =>
      this.queryBatch(buildPullRequestsQuery(batch), (data, errors) => parsePullRequestsResponse(batch, data, errors)),
    );
  }

  async fetchPullRequestSummaries(
    refs: readonly PullRequestRef[],
  ): Promise<Map<string, PullRequestSummary | PullRequestFetchError>> {
    this.assertConfigured();
    return fetchInBatches(refs, this.batching(this.settings.summaryBatchSize, 'pull request summaries'), (batch) =>
      this.queryBatch(buildPullRequestSummariesQuery(batch), (data, errors) =>
        parsePullRequestSummariesResponse(batch, data, errors),
      ),
    );
  }

  async getPullRequest(owner: string, repo: string, number: number): Promise<RestPullRequestFields> {
    this.assertConfigured();
    const key = `${owner}/${repo}#${number}`.toLowerCase();
    const cached = this.etags.get(key);
    const response = await this.send('core', () =>
      this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        headers: cached ? { 'if-none-match': cached.etag } : {},
        owner,
        pull_number: number,
        repo,
      }),
    );
    if (!response) {
      return cached!.fields; // 304: unchanged, and not counted against the budget
    }
    const fields = toRestFields(response.data);
    const etag = response.headers.etag;
    if (typeof etag === 'string') {
      this.etags.delete(key);
      this.etags.set(key, { etag, fields });
      if (this.etags.size > this.settings.etagCacheSize) {
        this.etags.delete(this.etags.keys().next().value!);
      }
    }
    return fields;
  }

  async getIssue(owner: string, repo: string, number: number): Promise<ForgeIssue> {
    this.assertConfigured();
    const response = await this.send('core', () =>
      this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { issue_number: number, owner, repo }),
    );
    return toIssue(response!.data);
  }

  async listIssues(owner: string, repo: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }> {
    this.assertConfigured();
    const response =
      query.q === null
        ? await this.send('core', () =>
            this.octokit.request('GET /repos/{owner}/{repo}/issues', {
              labels: query.labels.length > 0 ? query.labels.join(',') : undefined,
              owner,
              page: query.page,
              per_page: query.perPage,
              repo,
              sort: 'created',
              state: query.state,
            }),
          )
        : await this.send('core', () =>
            this.octokit.request('GET /search/issues', {
              order: 'desc',
              page: query.page,
              per_page: query.perPage,
              // Every qualifier quoted: the person's words are searched for, never read as qualifiers of ours.
              q: [
                `repo:${owner}/${repo}`,
                'is:issue',
                ...(query.state === 'all' ? [] : [`is:${query.state}`]),
                ...query.labels.map((label) => `label:"${label.replace(/"/g, '')}"`),
                (query.q ?? '').replace(/[^\p{L}\p{N}\s._#-]/gu, ' ').trim(),
              ].join(' '),
              sort: 'created',
            }),
          );
    const raw = response!.data as unknown;
    const list = (Array.isArray(raw) ? raw : ((raw as { items?: unknown[] }).items ?? [])) as RawIssue[];
    const link = String(response!.headers.link ?? '');
    return {
      hasNext: /rel="next"/.test(link),
      items: list.map(toIssue).filter((issue) => !issue.pullRequest),
    };
  }

  async listIssueComments(
    owner: string,
    repo: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }> {
    this.assertConfigured();
    const comments: ForgeIssueComment[] = [];
    for (let page = 1; comments.length < max; page++) {
      const response = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
        }),
      );
      const batch = response!.data as RawIssueComment[];
      comments.push(...batch.map(toIssueComment));
      if (batch.length < 100) {
        return { comments: comments.slice(0, max), more: comments.length > max };
      }
    }
    return { comments: comments.slice(0, max), more: true };
  }

  async listIssuesUpdatedSince(
    owner: string,
    repo: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }> {
    this.assertConfigured();
    const key = `issues:${owner}/${repo}:${since}:${page}`.toLowerCase();
    const cached = this.pages.get(key);
    const response = await this.send('core', () =>
      this.octokit.request('GET /repos/{owner}/{repo}/issues', {
        direction: 'asc',
        headers: cached ? { 'if-none-match': cached.etag } : {},
        owner,
        page,
        per_page: 100,
        repo,
        since,
        sort: 'updated',
        state: 'all',
      }),
    );
    if (response === null && cached) {
      return cached.value; // 304: unchanged, and not counted against the budget
    }
    const list = response!.data as RawIssue[];
    const value = {
      hasNext: /rel="next"/.test(String(response!.headers.link ?? '')),
      items: list.map(toIssue).filter((issue) => !issue.pullRequest),
      lastUpdatedAt: list.length > 0 ? (list[list.length - 1].updated_at ?? null) : null,
    };
    const etag = response!.headers.etag;
    if (typeof etag === 'string') {
      this.pages.delete(key);
      this.pages.set(key, { etag, value });
      if (this.pages.size > PAGE_CACHE_SIZE) {
        this.pages.delete(this.pages.keys().next().value!);
      }
    }
    return value;
  }

  async listIssueCommentsSince(
    owner: string,
    repo: string,
    number: number,
    since: string,
    max: number,
  ): Promise<ForgeIssueComment[]> {
    this.assertConfigured();
    const comments: ForgeIssueComment[] = [];
    for (let page = 1; comments.length < max; page++) {
      const response = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
          since,
        }),
      );
      const batch = response!.data as RawIssueComment[];
      comments.push(...batch.map(toIssueComment));
      if (batch.length < 100) {
        break;
      }
    }
    return comments.slice(0, max);
  }

  async listRepositoryCommentsSince(
    owner: string,
    repo: string,
    since: string,
    max: number,
  ): Promise<{ comments: Array<ForgeIssueComment & { issueNumber: number; updatedAt: string }>; more: boolean }> {
    this.assertConfigured();
    const comments = new Map<number, ForgeIssueComment & { issueNumber: number; updatedAt: string }>();
    // Pages move `since` forward (a comment edited meanwhile moves to the end of the order, and
    // counting pages would then skip the one after it), or, within one second, to the next page.
    let from = since;
    let page = 1;
    let more = false;
    for (let request = 0; request < Math.ceil(max / 100); request++) {
      const at = { from, page };
      const response = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/issues/comments', {
          direction: 'asc',
          owner,
          page: at.page,
          per_page: 100,
          repo,
          since: at.from,
          sort: 'updated',
        }),
      );
      const batch = response!.data as Array<RawIssueComment & { issue_url?: string; updated_at?: string }>;
      for (const raw of batch) {
        const issueNumber = Number(/\/issues\/(\d+)$/.exec(raw.issue_url ?? '')?.[1]);
        if (Number.isSafeInteger(issueNumber) && issueNumber > 0) {
          comments.set(raw.id, { ...toIssueComment(raw), issueNumber, updatedAt: raw.updated_at ?? raw.created_at });
        }
      }
      more = batch.length === 100;
      if (!more) {
        break;
      }
      const last = batch[batch.length - 1].updated_at ?? batch[batch.length - 1].created_at;
      page = last === from ? page + 1 : 1;
      from = last;
    }
    return {
      comments: [...comments.values()].sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.id - b.id),
      more,
    };
  }

  async lastLabeledBy(owner: string, repo: string, number: number, labels: readonly string[]): Promise<string | null> {
    this.assertConfigured();
    const wanted = new Set(labels.map((label) => label.toLowerCase()));
    let labeler: string | null = null;
    for (let page = 1; page <= 3; page++) {
      const response = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/events', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
        }),
      );
      const events = response!.data as Array<{
        event?: string;
        actor?: { login?: string } | null;
        label?: { name?: string };
      }>;
      for (const event of events) {
        if (!wanted.has((event.label?.name ?? '').toLowerCase())) {
          continue;
        }
        if (event.event === 'labeled') {
          labeler = event.actor?.login ?? null;
        } else if (event.event === 'unlabeled') {
          labeler = null;
        }
      }
      if (events.length < 100) {
        break;
      }
    }
    return labeler;
  }

  async permissionOf(owner: string, repo: string, user: string): Promise<string> {
    this.assertConfigured();
    try {
      const response = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
          owner,
          repo,
          username: user,
        }),
      );
      return String((response!.data as { permission?: string }).permission ?? 'none');
    } catch (err) {
      if (err instanceof GitHubError && err.code === 'not_found') {
        return 'none'; // not a collaborator (GitHub answers 404 for a stranger)
      }
      throw err;
    }
  }

  async login(): Promise<string> {
    this.assertConfigured();
    this.ownLogin ??= this.send('core', () => this.octokit.request('GET /user')).then((response) =>
      String((response!.data as { login?: string }).login ?? ''),
    );
    this.ownLogin.catch(() => {
      this.ownLogin = null; // asked again next time
    });
    return this.ownLogin;
  }

  async commentOnIssue(
    owner: string,
    repo: string,
    number: number,
    body: string,
  ): Promise<{ id: number; url: string }> {
    this.assertConfigured();
    const response = await this.send('core', () =>
      this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        body,
        issue_number: number,
        owner,
        repo,
        // Not re-sent on a 5xx or a lost answer: GitHub may have written it (the caller looks first).
        request: { retries: 0 },
      }),
    );
    const made = response!.data as RawIssueComment;
    return { id: made.id, url: made.html_url };
  }

  async closeIssue(owner: string, repo: string, number: number): Promise<void> {
    this.assertConfigured();
    await this.send('core', () =>
      this.octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
        issue_number: number,
        owner,
        repo,
        state: 'closed',
        state_reason: 'completed',
      }),
    );
  }

  async createPullRequest(
    owner: string,
    repo: string,
    input: CreatePullRequestInput,
  ): Promise<{ pullRequest: RestPullRequestFields; created: boolean }> {
    this.assertConfigured();
    try {
      const response = await this.send('core', () =>
        this.octokit.request('POST /repos/{owner}/{repo}/pulls', {
          base: input.base,
          body: input.body,
          head: input.head,
          owner,
          repo,
          title: input.title,
        }),
      );
      return { created: true, pullRequest: toRestFields(response!.data) };
    } catch (err) {
      // GitHub keeps one open PR per head and base: a second open (a retry, a person's click after
      // the agent opened it) gets 422 "A pull request already exists for owner:branch".
      if (!(
        err instanceof GitHubError &&
        err.details.status === 422 &&
        /pull request already exists/i.test(err.message)
      )) {
        throw err;
      }
      const open = await this.send('core', () =>
        this.octokit.request('GET /repos/{owner}/{repo}/pulls', {
          base: input.base,
          head: `${owner}:${input.head}`,
          owner,
          per_page: 1,
          repo,
          state: 'open',
        }),
      );
      const [existing] = open!.data as unknown[];
      if (existing === undefined) {
        throw err;
      }
      return { created: false, pullRequest: toRestFields(existing as RestPullRequest) };
    }
  }

  gitAuthorization(): string | null {
    return this.token === null
      ? null
      : `Authorization: Basic ${Buffer.from(`x-access-token:${this.token}`).toString('base64')}`;
  }

  rateLimit(): RateLimitStatus {
    return {
      core: this.budgets.core && { ...this.budgets.core },
      graphql: this.budgets.graphql && { ...this.budgets.graphql },
    };
  }

  async refreshRateLimit(): Promise<RateLimitStatus> {
    this.assertConfigured();
    const response = await this.send('core', () => this.octokit.request('GET /rate_limit'), { budgetGate: false });
    const observedAt = new Date().toISOString();
    const resources = response!.data.resources as Record<
      string,
      { limit: number; remaining: number; reset: number } | undefined
    >;
    for (const name of ['core', 'graphql'] as const) {
      const r = resources[name];
      if (r) {
        this.budgets[name] = {
          ...this.budgets[name],
          limit: r.limit,
          observedAt,
          remaining: r.remaining,
          resetAt: new Date(r.reset * 1000).toISOString(),
        };
      }
    }
    return this.rateLimit();
  }

  private batching(batchSize: number, what: string): BatchOptions {
    return { batchSize, timeoutMs: this.settings.timeoutMs, warn: (message) => this.logger.warn(message), what };
  }

  /** Sends one batch query, records its rateLimit figures and parses the answer (GraphQL errors per alias). */
  private async queryBatch<T>(
    { query, variables }: BatchQuery,
    parse: (data: Record<string, unknown> | null | undefined, errors: GraphQlError[]) => T[],
  ): Promise<T[]> {
    const response = await this.send('graphql', () =>
      this.octokit.request('POST /graphql', { baseUrl: this.graphqlBaseUrl, query, variables }),
    );
    const body = response!.data as { data?: Record<string, unknown> | null; errors?: GraphQlError[] };
    const errors = body.errors ?? [];
    if (errors.some((e) => e.type === 'RATE_LIMITED')) {
      throw this.rateLimitedError('graphql');
    }
    const rate = body.data?.rateLimit as
      { cost: number; limit: number; remaining: number; resetAt: string } | undefined;
    if (rate) {
      this.budgets.graphql = {
        lastCost: rate.cost,
        limit: rate.limit,
        observedAt: new Date().toISOString(),
        remaining: rate.remaining,
        resetAt: rate.resetAt,
      };
    }
    if (!body.data && errors.length === 0) {
      throw new GitHubError('failed', 'GitHub answered the GraphQL query without data');
    }
    return parse(body.data, errors);
  }

  /**
   * Sends one call: waits for (or refuses) a spent budget first, records the rate-limit headers of
   * the answer, and turns failures into GitHubError. Resolves null for a 304 Not Modified.
   */
  private async send<R extends ResponseLike>(
    resource: 'core' | 'graphql',
    call: () => Promise<R>,
    { budgetGate = true } = {},
  ): Promise<R | null> {
    if (budgetGate) {
      await this.waitForBudget(resource);
    }
    try {
      const response = await call();
      this.observe(resource, response.headers);
      return response;
    } catch (error) {
      const response = (error as { response?: ResponseLike }).response;
      if (response?.headers) {
        this.observe(resource, response.headers);
      }
      if ((error as { status?: number }).status === 304) {
        return null;
      }
      throw toGitHubError(error, this.settings.timeoutMs);
    }
  }

  private async waitForBudget(resource: 'core' | 'graphql'): Promise<void> {
    const budget = this.budgets[resource];
    if (!budget || budget.remaining > 0) {
      return;
    }
    const waitMs = Date.parse(budget.resetAt) + 1_000 - Date.now();
    if (waitMs <= 0) {
      return;
    }
    if (waitMs > this.settings.maxRateLimitWaitMs) {
      throw this.rateLimitedError(resource);
    }
    this.logger.warn(`GitHub ${resource} budget spent: waiting ${Math.ceil(waitMs / 1000)} s for the reset`);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }

  private observe(expected: 'core' | 'graphql', headers: ResponseLike['headers']): void {
    const remaining = Number(headers['x-ratelimit-remaining']);
    const limit = Number(headers['x-ratelimit-limit']);
    const reset = Number(headers['x-ratelimit-reset']);
    if (headers['x-ratelimit-remaining'] === undefined || !Number.isFinite(remaining) || !Number.isFinite(reset)) {
      return;
    }
    const resource =
      headers['x-ratelimit-resource'] === 'graphql' ? 'graphql' : headers['x-ratelimit-resource'] ? 'core' : expected;
    const budget: RateLimitBudget = {
      ...this.budgets[resource],
      limit: Number.isFinite(limit) ? limit : (this.budgets[resource]?.limit ?? 0),
      observedAt: new Date().toISOString(),
      remaining,
      resetAt: new Date(reset * 1000).toISOString(),
    };
    this.budgets[resource] = budget;
  }

  private rateLimitedError(resource: 'core' | 'graphql'): GitHubError {
    const resetAt = this.budgets[resource]?.resetAt;
    return new GitHubError(
      'rate_limited',
      `GitHub ${resource} rate limit exhausted${resetAt ? ` until ${resetAt}` : ''}`,
      { resetAt },
    );
  }

  private assertConfigured(): void {
    if (!this.configured) {
      throw new GitHubError(
        'not_configured',
        'No GitHub token: set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`',
      );
    }
  }

  private mayWait(
    kind: string,
    retryAfterSeconds: number,
    request: { method: string; url: string },
    allowed: boolean,
  ): boolean {
    this.logger.warn(
      `GitHub ${kind} on ${describe(request)}: ${allowed ? `retrying in ${retryAfterSeconds} s` : `giving up (wait ${retryAfterSeconds} s)`}`,
    );
    return allowed;
  }
}

function describe(request: { method?: string; url?: string } | undefined): string {
  // Route templates or URLs without query strings: no tokens, no bodies.
  return `${request?.method ?? ''} ${(request?.url ?? '').split('?')[0]}`.trim();
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** An issue as GitHub's REST answers it (the fields an import reads). */
interface RawIssue {
  number: number;
  html_url: string;
  title: string;
  body?: string | null;
  labels?: Array<string | { name?: string | null }>;
  user?: { login?: string } | null;
  state: string;
  pull_request?: unknown;
  created_at: string;
  updated_at?: string;
  comments?: number;
  author_association?: string;
}

function toIssue(data: RawIssue): ForgeIssue {
  return {
    author: data.user?.login ?? null,
    authorAssociation: data.author_association ?? 'NONE',
    body: data.body ?? '',
    commentCount: typeof data.comments === 'number' ? data.comments : 0,
    createdAt: data.created_at,
    labels: (data.labels ?? [])
      .map((label) => (typeof label === 'string' ? label : (label.name ?? '')))
      .filter((name) => name !== ''),
    number: data.number,
    pullRequest: data.pull_request !== undefined && data.pull_request !== null,
    state: data.state === 'closed' ? 'closed' : 'open',
    title: data.title,
    updatedAt: data.updated_at ?? data.created_at,
    url: data.html_url,
  };
}

/** A comment as GitHub's REST answers it. */
interface RawIssueComment {
  id: number;
  body?: string | null;
  user?: { login?: string } | null;
  created_at: string;
  html_url: string;
}

function toIssueComment(c: RawIssueComment): ForgeIssueComment {
  return { author: c.user?.login ?? null, body: c.body ?? '', createdAt: c.created_at, id: c.id, url: c.html_url };
}
