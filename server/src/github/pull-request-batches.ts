// How a call over many pull requests is cut into GraphQL batches and what a failure does to the
// rest, the same for snapshots and summaries: a PR-level error stays with its PR, a batch the server
// fails marks that batch `failed`, and a failure that would hit every batch alike stops the call.
import { GitHubError, toGitHubError } from './github.errors';
import { PullRequestFetchError, PullRequestRef, pullRequestKey } from '../forges/forge.types';
import { fetchError, splitRepository } from './pull-request-query';

/** Errors after which further batches would fail the same way. */
const STOPPING: ReadonlySet<string> = new Set(['network', 'rate_limited', 'timeout', 'unauthorized', 'forbidden']);

export interface BatchOptions {
  batchSize: number;
  /** The per-attempt timeout, to name a timeout failure. */
  timeoutMs: number;
  /** What a batch holds, for the log ("pull requests", "pull request summaries"). */
  what: string;
  warn: (message: string) => void;
}

/**
 * One entry per distinct ref under `pullRequestKey(ref)`: what `fetchBatch` gave for it, or an
 * error. Batches run in turn; `fetchBatch` throws for a failure of the whole batch.
 */
export async function fetchInBatches<T extends { ref: PullRequestRef }>(
  refs: readonly PullRequestRef[],
  options: BatchOptions,
  fetchBatch: (batch: PullRequestRef[]) => Promise<(T | PullRequestFetchError)[]>,
): Promise<Map<string, T | PullRequestFetchError>> {
  const { invalid, queue } = queueRefs(refs);
  const results = new Map<string, T | PullRequestFetchError>(
    invalid.map((error) => [pullRequestKey(error.ref), error]),
  );
  let stopped: GitHubError | null = null;
  for (let start = 0; start < queue.length; start += options.batchSize) {
    const batch = queue.slice(start, start + options.batchSize);
    if (stopped) {
      batch.forEach((ref) => results.set(pullRequestKey(ref), batchError(ref, 'skipped', stopped!)));
      continue;
    }
    try {
      for (const result of await fetchBatch(batch)) {
        results.set(pullRequestKey(result.ref), result);
      }
    } catch (error) {
      const failure = toGitHubError(error, options.timeoutMs);
      options.warn(`GitHub batch of ${batch.length} ${options.what} failed (${failure.code}): ${failure.message}`);
      stopped = STOPPING.has(failure.code) ? failure : null;
      batch.forEach((ref) =>
        results.set(pullRequestKey(ref), batchError(ref, stopped ? 'skipped' : 'failed', failure)),
      );
    }
  }
  return results;
}

/**
 * The distinct refs worth sending, in order (the first spelling of a PR wins), and a `not_found`
 * error for each ref that is not `owner/name` + a positive number (never sent).
 */
export function queueRefs(refs: readonly PullRequestRef[]): {
  queue: PullRequestRef[];
  invalid: PullRequestFetchError[];
} {
  const seen = new Set<string>();
  const queue: PullRequestRef[] = [];
  const invalid: PullRequestFetchError[] = [];
  for (const ref of refs) {
    const key = pullRequestKey(ref);
    if (seen.has(key)) {
      continue;
    }
    seen.add(key);
    if (splitRepository(ref.repository) && Number.isSafeInteger(ref.number) && ref.number > 0) {
      queue.push(ref);
    } else {
      invalid.push(fetchError(ref, 'not_found', `Not a pull request reference: ${ref.repository}#${ref.number}`));
    }
  }
  return { invalid, queue };
}

function batchError(ref: PullRequestRef, code: 'failed' | 'skipped', cause: GitHubError): PullRequestFetchError {
  return { ...fetchError(ref, code, cause.message), cause: cause.code };
}
