// Failures of a whole GitHub call (as opposed to one PR of a batch, see PullRequestFetchError).
// They carry no HTTP status mapping of their own: the reconciler decides to skip the tick, back
// off or log.

export type GitHubErrorCode =
  /** No token: GITHUB_TOKEN, GH_TOKEN and `gh auth token` gave nothing. Nothing was sent. */
  | 'not_configured'
  /** 401: the token is invalid or revoked. */
  | 'unauthorized'
  /** 403 / 404 on a REST call. */
  | 'forbidden'
  | 'not_found'
  /**
   * The primary budget is spent and resets later than the client may wait, or a secondary limit
   * asked for a longer pause (or persisted). `resetAt` says when to try again.
   */
  | 'rate_limited'
  /** A request got no complete answer within the timeout. */
  | 'timeout'
  /** Connection refused, reset or DNS failure, after retries. */
  | 'network'
  /** Any other non-success answer (5xx after retries, unexpected 4xx, malformed body). */
  | 'failed';

export class GitHubError extends Error {
  constructor(
    readonly code: GitHubErrorCode,
    message: string,
    readonly details: { status?: number; resetAt?: string; retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = 'GitHubError';
  }
}

export function isGitHubError(error: unknown, code?: GitHubErrorCode): error is GitHubError {
  return error instanceof GitHubError && (code === undefined || error.code === code);
}
