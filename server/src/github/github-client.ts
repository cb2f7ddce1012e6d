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

import { GitHubError } from './github.errors';
import { GitHubToken, resolveGitHubToken } from './github-token';
import {
  PullRequestFetchError,
  PullRequestRef,
  PullRequestResult,
  RateLimitBudget,
  RateLimitStatus,
  RestPullRequestFields,
  pullRequestKey,
} from './github.types';
import { GraphQlError, buildPullRequestsQuery, fetchError, parsePullRequestsResponse, splitRepository, toStatus } from './pull-request-query';

export const GITHUB_API_URL = 'https://api.github.com';

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
  /** One PR over REST, conditional on its ETag (a 304 is free and returns the cached fields). Throws GitHubError. */
  getPullRequest(owner: string, repo: string, number: number): Promise<RestPullRequestFields>;
  /** The budgets as last reported by GitHub's responses (no request). */
  rateLimit(): RateLimitStatus;
  /** Asks GitHub (`GET /rate_limit`, which costs nothing) and returns the fresh budgets. Throws GitHubError. */
  refreshRateLimit(): Promise<RateLimitStatus>;
}

export interface GitHubClientOptions {
  /** Null: not configured. */
  token: string | null;
  /** REST root: https://api.github.com (default), or `https://<host>/api/v3` for GitHub Enterprise Server. */
  baseUrl?: string;
  /** PRs per GraphQL query (default 20): small enough for GitHub's node limit and timeouts. */
  batchSize?: number;
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
  timeoutMs: 20_000,
};

// A 4xx is final, except 403/429 rate limits, which plugin-throttling handles (429 is listed so
// plugin-retry does not re-send it blindly, ignoring Retry-After).
const DO_NOT_RETRY = [400, 401, 403, 404, 410, 422, 429, 451];
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
/** Errors after which further batches would fail the same way. */
const STOPPING: ReadonlySet<string> = new Set(['network', 'rate_limited', 'timeout', 'unauthorized', 'forbidden']);

const GitHubOctokit = Octokit.plugin(retry, throttling);
type GitHubOctokit = InstanceType<typeof GitHubOctokit>;

interface ResponseLike {
  status: number;
  headers: Record<string, string | number | undefined>;
  data: any;
}

/** Resolves the token (see resolveGitHubToken) and builds the client; `gh` is asked for GHES hosts too. */
export async function createGitHubClient(options: Omit<GitHubClientOptions, 'token'> & { env?: NodeJS.ProcessEnv; ghExecutable?: string } = {}): Promise<OctokitGitHubClient> {
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
  readonly configured: boolean;
  readonly baseUrl: string;
  /** Where the token came from, when built by createGitHubClient. */
  tokenSource: GitHubToken['source'] | null = null;

  constructor(options: GitHubClientOptions) {
    this.settings = { ...DEFAULTS, ...definedOnly(options) };
    this.configured = !!options.token;
    this.baseUrl = (options.baseUrl ?? GITHUB_API_URL).replace(/\/+$/, '');
    // GitHub Enterprise Server serves REST under /api/v3 and GraphQL at /api/graphql.
    this.graphqlBaseUrl = this.baseUrl.replace(/\/api\/v3$/, '/api');
    this.octokit = new GitHubOctokit({
      auth: options.token ?? undefined,
      baseUrl: this.baseUrl,
      // Octokit logs deprecations and plugin failures; requests and tokens never reach it.
      log: { debug: () => {}, error: (m: string) => this.logger.error(m), info: () => {}, warn: (m: string) => this.logger.warn(m) },
      request: { fetch: this.fetchWithTimeout },
      retry: { doNotRetry: DO_NOT_RETRY, retries: this.settings.retries, retryAfterBaseValue: this.settings.retryBaseDelayMs },
      throttle: {
        id: `agent-manager:${new URL(this.baseUrl).host}`,
        onRateLimit: (retryAfter: number, request: { method: string; url: string }, _octokit: unknown, retryCount: number) =>
          this.mayWait('primary rate limit', retryAfter, request, retryCount < 1 && retryAfter * 1000 <= this.settings.maxRateLimitWaitMs),
        onSecondaryRateLimit: (retryAfter: number, request: { method: string; url: string }, _octokit: unknown, retryCount: number) =>
          this.mayWait('secondary rate limit', retryAfter, request, retryCount < this.settings.retries && retryAfter * 1000 <= this.settings.maxRetryAfterMs),
      },
    } as ConstructorParameters<typeof GitHubOctokit>[0]);
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
    const results = new Map<string, PullRequestResult>();
    const queue: PullRequestRef[] = [];
    for (const ref of refs) {
      const key = pullRequestKey(ref);
      if (results.has(key) || queue.some((queued) => pullRequestKey(queued) === key)) {
        continue;
      }
      if (splitRepository(ref.repository) && Number.isSafeInteger(ref.number) && ref.number > 0) {
        queue.push(ref);
      } else {
        results.set(key, fetchError(ref, 'not_found', `Not a pull request reference: ${ref.repository}#${ref.number}`));
      }
    }
    let stopped: GitHubError | null = null;
    for (let start = 0; start < queue.length; start += this.settings.batchSize) {
      const batch = queue.slice(start, start + this.settings.batchSize);
      if (stopped) {
        batch.forEach((ref) => results.set(pullRequestKey(ref), batchError(ref, 'skipped', stopped!)));
        continue;
      }
      try {
        for (const result of await this.fetchBatch(batch)) {
          results.set(pullRequestKey(result.ref), result);
        }
      } catch (error) {
        const failure = this.translate(error);
        this.logger.warn(`GitHub batch of ${batch.length} pull requests failed (${failure.code}): ${failure.message}`);
        stopped = STOPPING.has(failure.code) ? failure : null;
        batch.forEach((ref) => results.set(pullRequestKey(ref), batchError(ref, stopped ? 'skipped' : 'failed', failure)));
      }
    }
    return results;
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

  rateLimit(): RateLimitStatus {
    return { core: this.budgets.core && { ...this.budgets.core }, graphql: this.budgets.graphql && { ...this.budgets.graphql } };
  }

  async refreshRateLimit(): Promise<RateLimitStatus> {
    this.assertConfigured();
    const response = await this.send('core', () => this.octokit.request('GET /rate_limit'), { budgetGate: false });
    const observedAt = new Date().toISOString();
    const resources = response!.data.resources as Record<string, { limit: number; remaining: number; reset: number } | undefined>;
    for (const name of ['core', 'graphql'] as const) {
      const r = resources[name];
      if (r) {
        this.budgets[name] = { ...this.budgets[name], limit: r.limit, observedAt, remaining: r.remaining, resetAt: new Date(r.reset * 1000).toISOString() };
      }
    }
    return this.rateLimit();
  }

  private async fetchBatch(batch: PullRequestRef[]): Promise<PullRequestResult[]> {
    const { query, variables } = buildPullRequestsQuery(batch);
    const response = await this.send('graphql', () => this.octokit.request('POST /graphql', { baseUrl: this.graphqlBaseUrl, query, variables }));
    const body = response!.data as { data?: Record<string, unknown> | null; errors?: GraphQlError[] };
    const errors = body.errors ?? [];
    if (errors.some((e) => e.type === 'RATE_LIMITED')) {
      throw this.rateLimitedError('graphql');
    }
    const rate = body.data?.rateLimit as { cost: number; limit: number; remaining: number; resetAt: string } | undefined;
    if (rate) {
      this.budgets.graphql = { lastCost: rate.cost, limit: rate.limit, observedAt: new Date().toISOString(), remaining: rate.remaining, resetAt: rate.resetAt };
    }
    if (!body.data && errors.length === 0) {
      throw new GitHubError('failed', 'GitHub answered the GraphQL query without data');
    }
    return parsePullRequestsResponse(batch, body.data, errors);
  }

  /**
   * Sends one call: waits for (or refuses) a spent budget first, records the rate-limit headers of
   * the answer, and turns failures into GitHubError. Resolves null for a 304 Not Modified.
   */
  private async send<R extends ResponseLike>(resource: 'core' | 'graphql', call: () => Promise<R>, { budgetGate = true } = {}): Promise<R | null> {
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
      throw this.translate(error);
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
    const resource = headers['x-ratelimit-resource'] === 'graphql' ? 'graphql' : headers['x-ratelimit-resource'] ? 'core' : expected;
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
    return new GitHubError('rate_limited', `GitHub ${resource} rate limit exhausted${resetAt ? ` until ${resetAt}` : ''}`, { resetAt });
  }

  /** Maps whatever Octokit, fetch or the plugins threw to a GitHubError (messages never include tokens). */
  private translate(error: unknown): GitHubError {
    if (error instanceof GitHubError) {
      return error;
    }
    const e = error as { name?: string; message?: string; status?: number; response?: ResponseLike };
    const message = e.message ?? String(error);
    if (e.name === 'AbortError' || e.name === 'TimeoutError') {
      return new GitHubError('timeout', `GitHub did not answer within ${this.settings.timeoutMs} ms`);
    }
    const headers = e.response?.headers ?? {};
    const status = e.status;
    const rateLimited =
      /rate limit/i.test(message) ||
      (e.response?.data?.errors ?? []).some?.((x: GraphQlError) => x.type === 'RATE_LIMITED') ||
      ((status === 403 || status === 429) && (headers['x-ratelimit-remaining'] === '0' || headers['retry-after'] !== undefined));
    if (rateLimited) {
      const retryAfter = Number(headers['retry-after']);
      const reset = Number(headers['x-ratelimit-reset']);
      return new GitHubError('rate_limited', `GitHub rate limit: ${message}`, {
        resetAt: Number.isFinite(reset) && reset > 0 ? new Date(reset * 1000).toISOString() : undefined,
        retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined,
        status,
      });
    }
    if (status === 401) {
      return new GitHubError('unauthorized', 'GitHub rejected the token (401)', { status });
    }
    if (status === 403) {
      return new GitHubError('forbidden', `GitHub refused access (403): ${message}`, { status });
    }
    if (status === 404) {
      return new GitHubError('not_found', `GitHub found nothing there (404)`, { status });
    }
    if (status === 500 && !e.response) {
      return new GitHubError('network', `GitHub unreachable: ${rootCause(error)}`);
    }
    return new GitHubError('failed', `GitHub request failed${status ? ` (${status})` : ''}: ${message}`, { status });
  }

  private assertConfigured(): void {
    if (!this.configured) {
      throw new GitHubError('not_configured', 'No GitHub token: set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`');
    }
  }

  private mayWait(kind: string, retryAfterSeconds: number, request: { method: string; url: string }, allowed: boolean): boolean {
    this.logger.warn(`GitHub ${kind} on ${describe(request)}: ${allowed ? `retrying in ${retryAfterSeconds} s` : `giving up (wait ${retryAfterSeconds} s)`}`);
    return allowed;
  }

  /** fetch bounded by the timeout for the whole exchange: the body is read before the timer stops. */
  private readonly fetchWithTimeout = async (url: string | URL, init: RequestInit = {}): Promise<Response> => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.settings.timeoutMs);
    try {
      const response = await fetch(url, { ...init, signal: controller.signal });
      const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
      return new Response(body, { headers: response.headers, status: response.status, statusText: response.statusText });
    } catch (error) {
      if (controller.signal.aborted) {
        // Named AbortError so that @octokit/request rethrows it as is and plugin-retry, which only
        // re-sends Octokit RequestErrors, does not retry it. Built here rather than passing on
        // fetch's DOMException: under Jest that comes from another realm, fails `instanceof Error`
        // in @octokit/request and would be wrapped into a retryable RequestError.
        throw Object.assign(new Error(`no answer within ${this.settings.timeoutMs} ms`), { name: 'AbortError' });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}

function batchError(ref: PullRequestRef, code: 'failed' | 'skipped', cause: GitHubError): PullRequestFetchError {
  return { ...fetchError(ref, code, cause.message), cause: cause.code };
}

function describe(request: { method?: string; url?: string } | undefined): string {
  // Route templates or URLs without query strings: no tokens, no bodies.
  return `${request?.method ?? ''} ${(request?.url ?? '').split('?')[0]}`.trim();
}

/** The innermost cause's code or message: `ECONNREFUSED` rather than fetch's "fetch failed". */
function rootCause(error: unknown): string {
  let current = error as { cause?: unknown; code?: unknown; message?: unknown } | undefined;
  while (current && typeof current.cause === 'object' && current.cause !== null) {
    current = current.cause as typeof current;
  }
  return String(current?.code ?? current?.message ?? 'unknown error');
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function toRestFields(data: any): RestPullRequestFields {
  const state = data.merged ? 'merged' : data.state === 'closed' ? 'closed' : 'open';
  return {
    baseBranch: data.base.ref,
    headBranch: data.head.ref,
    headSha: data.head.sha,
    isDraft: !!data.draft,
    mergeable: data.mergeable ?? null,
    mergeableState: data.mergeable_state ?? 'unknown',
    number: data.number,
    repository: data.base.repo?.full_name ?? '',
    state,
    status: toStatus(state, !!data.draft),
    title: data.title,
    updatedAt: data.updated_at,
    url: data.html_url,
  };
}
