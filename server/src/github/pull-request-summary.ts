// The cheap half of change detection. The summary query asks, per pull request, only for scalar
// fields and counts (`totalCount`, check runs and statuses counted by state), never for lists of
// items, so one GraphQL request covers 100 PRs. Each summary carries a fingerprint; the reconciler
// compares it with the last one and fetches a full snapshot (pull-request-query.ts) only on change.
//
// Budget, by GitHub's documented formula (each connection costs one request per parent node,
// whatever its `first`/`last`; the sum / 100, rounded, at least 1 point): a summary asks for 5
// connections per PR (comments, reviews, reviewThreads, commits(last: 1), its rollup's contexts),
// so 100 PRs cost ≈ 5 points, against ≈ 25 per PR and 5 points per 20 PRs for a snapshot.
import {
  CommitStatusState,
  Mergeable,
  PullRequestRef,
  PullRequestState,
  PullRequestSummary,
  PullRequestSummaryResult,
} from '../forges/forge.types';
import { BatchQuery, GraphQlError, buildBatchQuery, parseBatchResponse, toStatus } from './pull-request-query';

/** The review states a snapshot reads (pending drafts excluded), so both views count the same reviews. */
const SUBMITTED_REVIEWS = 'states: [APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED]';

export const PULL_REQUEST_SUMMARY_FIELDS = `fragment PullRequestSummaryFields on PullRequest {
  number state isDraft merged mergeable headRefOid updatedAt
  repository { nameWithOwner }
  comments(first: 0) { totalCount }
  reviews(first: 0, ${SUBMITTED_REVIEWS}) { totalCount }
  reviewThreads(first: 0) { totalCount }
  commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: 0) {
    totalCount checkRunCountsByState { state count } statusContextCountsByState { state count }
  } } } } }
}`;

/** The summary query and variables for `refs` (already validated); alias i is `pr<i>`, as for snapshots. */
export function buildPullRequestSummariesQuery(refs: readonly PullRequestRef[]): BatchQuery {
  return buildBatchQuery('PullRequestSummaries', 'PullRequestSummaryFields', PULL_REQUEST_SUMMARY_FIELDS, refs);
}

/** One result per ref, in order, with the error semantics of parsePullRequestsResponse. */
export function parsePullRequestSummariesResponse(
  refs: readonly PullRequestRef[],
  data: Record<string, unknown> | null | undefined,
  errors: readonly GraphQlError[] = [],
): PullRequestSummaryResult[] {
  return parseBatchResponse(refs, data, errors, toSummary);
}

interface StateCount {
  state: string;
  count: number;
}
export interface RawSummaryRollup {
  state: CommitStatusState;
  contexts: {
    totalCount: number;
    /** CheckRunState: a completed run's conclusion (SUCCESS, FAILURE, …), else its status (QUEUED, IN_PROGRESS, …). */
    checkRunCountsByState: StateCount[] | null;
    statusContextCountsByState: StateCount[] | null;
  };
}
export interface RawPullRequestSummary {
  number: number;
  state: 'OPEN' | 'CLOSED' | 'MERGED';
  isDraft: boolean;
  merged: boolean;
  mergeable: Mergeable;
  headRefOid: string;
  updatedAt: string;
  repository: { nameWithOwner: string };
  comments: { totalCount: number };
  reviews: { totalCount: number };
  reviewThreads: { totalCount: number };
  commits: { nodes: ({ commit: { oid: string; statusCheckRollup: RawSummaryRollup | null } } | null)[] };
}

function toSummary(ref: PullRequestRef, raw: RawPullRequestSummary): PullRequestSummary {
  const state = (raw.merged ? 'merged' : raw.state.toLowerCase()) as PullRequestState;
  return {
    fingerprint: summaryFingerprint(raw),
    headSha: raw.headRefOid,
    isDraft: raw.isDraft,
    kind: 'summary',
    mergeable: raw.mergeable,
    number: raw.number,
    ref,
    repository: raw.repository.nameWithOwner,
    state,
    status: toStatus(state, raw.isDraft),
    updatedAt: raw.updatedAt,
  };
}

/**
 * `v1|<fields>`, `|`-separated `name:value` pairs, in this order:
 *
 *   state      OPEN / CLOSED / MERGED              draft      draft or ready
 *   merged     yes / no                            head       headRefOid (a push)
 *   mergeable  MERGEABLE / CONFLICTING / UNKNOWN   updated    updatedAt (GitHub bumps it for new
 *   comments   conversation comments (count)                  comments, reviews, inline comments and
 *   reviews    submitted reviews (count)                      replies, pushes, edits, state changes)
 *   threads    review threads (count)              commit     oid of the commit the checks belong to
 *   checks     rollup state / number of contexts, or `none`
 *   runs       check runs counted by state, `STATE=n` sorted, zeros dropped (`-` when none)
 *   statuses   commit statuses counted by state, likewise
 *
 * Any check run or status that appears or changes state changes `runs` or `statuses`. Not seen: an
 * edit of a comment (when GitHub does not bump updatedAt), and two checks swapping states between
 * two polls (the counts stay equal; the rollup state usually does not).
 */
export function summaryFingerprint(raw: RawPullRequestSummary): string {
  const commit = raw.commits.nodes[raw.commits.nodes.length - 1]?.commit ?? null;
  const rollup = commit?.statusCheckRollup ?? null;
  return [
    'v1',
    `state:${raw.state}`,
    `draft:${raw.isDraft ? 'draft' : 'ready'}`,
    `merged:${raw.merged ? 'yes' : 'no'}`,
    `head:${raw.headRefOid}`,
    `mergeable:${raw.mergeable}`,
    `updated:${raw.updatedAt}`,
    `comments:${raw.comments.totalCount}`,
    `reviews:${raw.reviews.totalCount}`,
    `threads:${raw.reviewThreads.totalCount}`,
    `commit:${commit?.oid ?? '-'}`,
    `checks:${rollup ? `${rollup.state}/${rollup.contexts.totalCount}` : 'none'}`,
    `runs:${countsByState(rollup?.contexts.checkRunCountsByState)}`,
    `statuses:${countsByState(rollup?.contexts.statusContextCountsByState)}`,
  ].join('|');
}

/** `A=1,B=2`: sorted by state, duplicates summed and zeros dropped, so GitHub's order and padding do not matter. */
function countsByState(counts: readonly StateCount[] | null | undefined): string {
  const byState = new Map<string, number>();
  for (const { state, count } of counts ?? []) {
    byState.set(state, (byState.get(state) ?? 0) + count);
  }
  const entries = [...byState].filter(([, count]) => count > 0).map(([state, count]) => `${state}=${count}`);
  return entries.length > 0 ? entries.sort().join(',') : '-';
}
