// Failures of a whole call to a forge (GitHub, GitLab), as opposed to one pull request of a batch
// (see PullRequestFetchError). They carry no HTTP status mapping of their own: the reconciler
// decides to skip the tick, back off or log; an API caller maps them to its own answer.

export type ForgeErrorCode =
  /** No token for this forge. Nothing was sent. */
  | 'not_configured'
  /** 401: the token is invalid or revoked. */
  | 'unauthorized'
  /** 403 / 404 on a REST call. */
  | 'forbidden'
  | 'not_found'
  /**
   * The budget is spent and resets later than the client may wait, or the forge asked for a
   * longer pause. `resetAt` says when to try again.
   */
  | 'rate_limited'
  /** A request got no complete answer within the timeout. */
  | 'timeout'
  /** Connection refused, reset or DNS failure, after retries. */
  | 'network'
  /** Any other non-success answer (5xx after retries, unexpected 4xx, malformed body). */
  | 'failed';

export class ForgeError extends Error {
  constructor(
    readonly code: ForgeErrorCode,
    message: string,
    readonly details: { status?: number; resetAt?: string; retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = 'ForgeError';
  }
}
