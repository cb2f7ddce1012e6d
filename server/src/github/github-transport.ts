// How the client's requests travel to GitHub. Octokit does the HTTP (auth, URLs, error types) with
// two official plugins: plugin-retry re-sends 5xx answers and network failures with growing,
// jittered pauses; plugin-throttling honours secondary rate limits (403/429 "secondary rate limit"
// + Retry-After) and primary exhaustion (x-ratelimit-remaining: 0 until x-ratelimit-reset), and
// spaces GraphQL requests (one at a time, ≥ 1 s apart, as GitHub asks of heavy clients). This adds
// what neither plugin does: a per-attempt timeout, a pre-flight check of the last seen budget, a
// bound on how long it may wait for a reset, and one error type for callers.
//
// The Octokit packages are ES modules only. The compiled server `require()`s them natively (Node
// ≥ 20.19); their bundled typings resolve under `moduleResolution: node`; Jest transpiles them
// (see jest.config.js).
import type { Logger } from '@nestjs/common';
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';

import type { RateLimitBudget, RateLimitStatus } from '../forges/forge.types';
import { fetchWithTimeout } from './fetch-with-timeout';
import { GitHubError, rootCause, toGitHubError } from './github.errors';
import type { BatchOptions } from './pull-request-batches';
import type { BatchQuery, GraphQlError } from './pull-request-query';

export const GITHUB_API_URL = 'https://api.github.com';

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
export type GitHubOctokit = InstanceType<typeof GitHubOctokit>;

export interface ResponseLike {
  status: number;
  headers: Record<string, string | number | undefined>;
  /** Whatever JSON GitHub answered: each caller states the shape it reads. */
  data: unknown;
}

/** One GitHub host with one token: Octokit, its budgets, and the one way a request is sent. */
export class GitHubTransport {
  readonly octokit: GitHubOctokit;
  readonly settings: typeof DEFAULTS;
  readonly graphqlBaseUrl: string;
  readonly configured: boolean;
  readonly baseUrl: string;
  readonly token: string | null;
  private readonly budgets: RateLimitStatus = { core: null, graphql: null };

  constructor(
    options: GitHubClientOptions,
    private readonly logger: Logger,
  ) {
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

  batching(batchSize: number, what: string): BatchOptions {
    return { batchSize, timeoutMs: this.settings.timeoutMs, warn: (message) => this.logger.warn(message), what };
  }

  /** Sends one batch query, records its rateLimit figures and parses the answer (GraphQL errors per alias). */
  async queryBatch<T>(
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
  async send<R extends ResponseLike>(
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

  assertConfigured(): void {
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
