// The manager's only door to GitHub: what it asks (pull requests in GraphQL batches and by REST with
// ETags, the pull request it opens, and through GitHubIssues the issues it imports and writes
// back to). How a request travels (Octokit, retries, rate limits, timeouts) is github-transport.ts.
import { Logger } from '@nestjs/common';

import type { ForgeIssue, ForgeIssueComment, IssueQuery } from '../forges/forge-issues';
import type {
  PullRequestFetchError,
  PullRequestRef,
  PullRequestResult,
  PullRequestSummary,
  RateLimitStatus,
  RestPullRequestFields,
} from '../forges/forge.types';
import { GitHubError } from './github.errors';
import { GitHubIssues } from './github-issues';
import { GITHUB_API_URL, type GitHubClientOptions, GitHubTransport } from './github-transport';
import { type GitHubToken, resolveGitHubToken } from './github-token';
import { fetchInBatches } from './pull-request-batches';
import {
  type RestPullRequest,
  buildPullRequestsQuery,
  parsePullRequestsResponse,
  toRestFields,
} from './pull-request-query';
import { buildPullRequestSummariesQuery, parsePullRequestSummariesResponse } from './pull-request-summary';

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
  private readonly transport: GitHubTransport;
  private readonly issues: GitHubIssues;
  private readonly etags = new Map<string, { etag: string; fields: RestPullRequestFields }>();
  private ownLogin: Promise<string> | null = null;
  readonly configured: boolean;
  readonly baseUrl: string;
  /** Where the token came from, when built by createGitHubClient. */
  tokenSource: GitHubToken['source'] | null = null;

  constructor(options: GitHubClientOptions) {
    this.transport = new GitHubTransport(options, this.logger);
    this.issues = new GitHubIssues(this.transport);
    this.configured = this.transport.configured;
    this.baseUrl = this.transport.baseUrl;
  }

  async fetchPullRequests(refs: readonly PullRequestRef[]): Promise<Map<string, PullRequestResult>> {
    this.transport.assertConfigured();
    return fetchInBatches(refs, this.transport.batching(this.transport.settings.batchSize, 'pull requests'), (batch) =>
      this.transport.queryBatch(buildPullRequestsQuery(batch), (data, errors) =>
        parsePullRequestsResponse(batch, data, errors),
      ),
    );
  }

  async fetchPullRequestSummaries(
    refs: readonly PullRequestRef[],
  ): Promise<Map<string, PullRequestSummary | PullRequestFetchError>> {
    this.transport.assertConfigured();
    return fetchInBatches(
      refs,
      this.transport.batching(this.transport.settings.summaryBatchSize, 'pull request summaries'),
      (batch) =>
        this.transport.queryBatch(buildPullRequestSummariesQuery(batch), (data, errors) =>
          parsePullRequestSummariesResponse(batch, data, errors),
        ),
    );
  }

  async getPullRequest(owner: string, repo: string, number: number): Promise<RestPullRequestFields> {
    this.transport.assertConfigured();
    const key = `${owner}/${repo}#${number}`.toLowerCase();
    const cached = this.etags.get(key);
    const response = await this.transport.send('core', () =>
      this.transport.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
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
      if (this.etags.size > this.transport.settings.etagCacheSize) {
        this.etags.delete(this.etags.keys().next().value!);
      }
    }
    return fields;
  }

  // The issue side (intake and write-back) is GitHubIssues'; the client answers for it.
  readonly getIssue: GitHubClient['getIssue'] = (...args) => this.issues.getIssue(...args);
  readonly listIssues: GitHubClient['listIssues'] = (...args) => this.issues.listIssues(...args);
  readonly listIssueComments: GitHubClient['listIssueComments'] = (...args) => this.issues.listIssueComments(...args);
  readonly listIssuesUpdatedSince: GitHubClient['listIssuesUpdatedSince'] = (...args) =>
    this.issues.listIssuesUpdatedSince(...args);
  readonly listIssueCommentsSince: GitHubClient['listIssueCommentsSince'] = (...args) =>
    this.issues.listIssueCommentsSince(...args);
  readonly listRepositoryCommentsSince: GitHubClient['listRepositoryCommentsSince'] = (...args) =>
    this.issues.listRepositoryCommentsSince(...args);
  readonly lastLabeledBy: GitHubClient['lastLabeledBy'] = (...args) => this.issues.lastLabeledBy(...args);
  readonly permissionOf: GitHubClient['permissionOf'] = (...args) => this.issues.permissionOf(...args);
  readonly commentOnIssue: GitHubClient['commentOnIssue'] = (...args) => this.issues.commentOnIssue(...args);
  readonly closeIssue: GitHubClient['closeIssue'] = (...args) => this.issues.closeIssue(...args);

  async login(): Promise<string> {
    this.transport.assertConfigured();
    this.ownLogin ??= this.transport
      .send('core', () => this.transport.octokit.request('GET /user'))
      .then((response) => String((response!.data as { login?: string }).login ?? ''));
    this.ownLogin.catch(() => {
      this.ownLogin = null; // asked again next time
    });
    return this.ownLogin;
  }

  async createPullRequest(
    owner: string,
    repo: string,
    input: CreatePullRequestInput,
  ): Promise<{ pullRequest: RestPullRequestFields; created: boolean }> {
    this.transport.assertConfigured();
    try {
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('POST /repos/{owner}/{repo}/pulls', {
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
      const open = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/pulls', {
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
    return this.transport.token === null
      ? null
      : `Authorization: Basic ${Buffer.from(`x-access-token:${this.transport.token}`).toString('base64')}`;
  }

  rateLimit(): RateLimitStatus {
    return this.transport.rateLimit();
  }

  refreshRateLimit(): Promise<RateLimitStatus> {
    return this.transport.refreshRateLimit();
  }
}
