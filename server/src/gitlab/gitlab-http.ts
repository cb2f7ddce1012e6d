// GitLab's REST API v4 over fetch, as the client needs it (issue 49 §5): a timeout per attempt,
// retries of 5xx and network failures with growing jittered pauses, GitLab's rate-limit headers
// honoured (a 429 waits out a short Retry-After, a long one fails with when to come back, and a
// spent budget is not spent again), pagination by `x-next-page`, and one error type (ForgeError).
// What the requests mean is the client's (gitlab-client.ts); this is how they travel.
import { ForgeError } from '../forges/forge.errors';
import { fetchWithTimeout } from '../github/fetch-with-timeout';
import { rootCause } from '../github/github.errors';

export const GITLAB_API_URL = 'https://gitlab.com/api/v4';

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

/** One GitLab instance's API with one token: every request the client makes goes through here. */
export class GitLabHttp {
  readonly settings: typeof DEFAULTS;
  readonly token: string | null;
  readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  /** The last figures GitLab reported: a spent budget is not asked again before it resets. */
  private limit: { remaining: number; resetAt: number } | null = null;

  constructor(options: GitLabClientOptions) {
    this.settings = {
      maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? DEFAULTS.maxRateLimitWaitMs,
      retries: options.retries ?? DEFAULTS.retries,
      retryBaseDelayMs: options.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs,
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    };
    this.token = options.token || null;
    this.baseUrl = (options.baseUrl ?? GITLAB_API_URL).replace(/\/+$/, '');
    this.fetch = fetchWithTimeout(this.settings.timeoutMs);
  }

  budget(): { remaining: number; resetAt: string } | null {
    return this.limit && { remaining: this.limit.remaining, resetAt: new Date(this.limit.resetAt).toISOString() };
  }

  /** Whether GitLab said the budget is spent until a reset still ahead. */
  spent(): boolean {
    return this.limit !== null && this.limit.remaining <= 0 && this.limit.resetAt > Date.now();
  }

  /** One page of a list, and GitLab's `x-next-page` ('' on the last). */
  async page<T>(path: string, query: Record<string, string>): Promise<{ items: T[]; next: string }> {
    const response = await this.request('GET', path, { query });
    return { items: await parseJson<T[]>(response), next: response.headers.get('x-next-page') ?? '' };
  }

  /**
   * The items of the newest `maxPages` pages of 100 of an oldest-first list, oldest first: the
   * first page says how many there are (`x-total-pages`), then the last ones are read.
   */
  async newestPages<T>(path: string, maxPages: number): Promise<T[]> {
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

  async json<T>(
    method: string,
    path: string,
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<T> {
    return parseJson<T>(await this.request(method, path, options));
  }

  /** One call with retries; answers a 2xx response or throws ForgeError (messages never carry the token). */
  async request(
    method: string,
    path: string,
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<Response> {
    if (!this.token) {
      throw new ForgeError('not_configured', 'no GitLab token (GITLAB_TOKEN or `glab auth login`)');
    }
    if (this.spent()) {
      throw new ForgeError('rate_limited', 'GitLab rate limit spent: not asked again before it resets', {
        resetAt: this.budget()?.resetAt,
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

  observeBudget(headers: Headers): void {
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

export async function parseJson<T>(response: Response): Promise<T> {
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

/** GitLab addresses a project by its URL-encoded full path (`group%2Fsub%2Fproject`). */
export function encodeProject(path: string): string {
  return encodeURIComponent(path);
}
