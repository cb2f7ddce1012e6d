import { ForgeError, type ForgeErrorCode } from '../forges/forge.errors';

/** GitHub's failures are a forge's (one set of codes for every forge). */
export type GitHubErrorCode = ForgeErrorCode;

export class GitHubError extends ForgeError {
  constructor(code: ForgeErrorCode, message: string, details: ForgeError['details'] = {}) {
    super(code, message, details);
    this.name = 'GitHubError';
  }
}

/** Maps whatever Octokit, fetch or the plugins threw to a GitHubError (messages never include tokens). */
export function toGitHubError(error: unknown, timeoutMs: number): GitHubError {
  if (error instanceof GitHubError) {
    return error;
  }
  const e = error as {
    name?: string;
    message?: string;
    status?: number;
    response?: { headers: Record<string, string | number | undefined>; data?: { errors?: Array<{ type?: string }> } };
  };
  const message = e.message ?? String(error);
  if (e.name === 'AbortError' || e.name === 'TimeoutError') {
    return new GitHubError('timeout', `GitHub did not answer within ${timeoutMs} ms`);
  }
  const headers = e.response?.headers ?? {};
  const status = e.status;
  const rateLimited =
    /rate limit/i.test(message) ||
    (Array.isArray(e.response?.data?.errors) && e.response.data.errors.some((x) => x?.type === 'RATE_LIMITED')) ||
    ((status === 403 || status === 429) &&
      (headers['x-ratelimit-remaining'] === '0' || headers['retry-after'] !== undefined));
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

/** The innermost cause's code or message: `ECONNREFUSED` rather than fetch's "fetch failed". */
export function rootCause(error: unknown): string {
  let current = error as { cause?: unknown; code?: unknown; message?: unknown } | undefined;
  while (current && typeof current.cause === 'object' && current.cause !== null) {
    current = current.cause;
  }
  return String(current?.code ?? current?.message ?? 'unknown error');
}
