import type { PullRequestStatus } from '@libs/contracts';

import type { ForgeErrorCode } from './forge.errors';

/** A pull request the manager tracks. `repository` is `owner/name` (any case). */
export interface PullRequestRef {
  repository: string;
  number: number;
}

/** The map key for a ref: lower-cased `owner/name#number`, the PR's identity (GitHub names are case-insensitive). */
export function pullRequestKey(ref: PullRequestRef): string {
  return `${ref.repository.toLowerCase()}#${ref.number}`;
}

/**
 * How much of each list a snapshot holds. The newest items are kept (`last: N` in GraphQL), so a
 * reconciler polling every few minutes sees everything new unless more than N arrive in between.
 * Bounds keep one batch within GitHub's node limit and its cost at a few points.
 */
export const SNAPSHOT_LIMITS = {
  /** Conversation (issue) comments: the newest 50. */
  comments: 50,
  /** Submitted reviews (pending drafts excluded): the newest 50. */
  reviews: 50,
  /** Review threads: the newest 20, and in each the newest 10 inline comments. */
  reviewThreads: 20,
  reviewThreadComments: 10,
  /** Check runs and commit statuses of the head commit, together: the first 100. */
  checks: 100,
} as const;

export type PullRequestState = 'open' | 'closed' | 'merged';
/** GitHub computes mergeability lazily: UNKNOWN right after a push, then MERGEABLE or CONFLICTING. */
export type Mergeable = 'MERGEABLE' | 'CONFLICTING' | 'UNKNOWN';
export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';
export type CheckRunStatus = 'QUEUED' | 'IN_PROGRESS' | 'COMPLETED' | 'WAITING' | 'PENDING' | 'REQUESTED';
export type CheckRunConclusion =
  | 'ACTION_REQUIRED'
  | 'CANCELLED'
  | 'FAILURE'
  | 'NEUTRAL'
  | 'SKIPPED'
  | 'STALE'
  | 'STARTUP_FAILURE'
  | 'SUCCESS'
  | 'TIMED_OUT';
export type CommitStatusState = 'ERROR' | 'EXPECTED' | 'FAILURE' | 'PENDING' | 'SUCCESS';

/** Fields every comment-like item has. `id` is GitHub's global node id; `databaseId` the REST/webhook id. */
interface Authored {
  id: string;
  databaseId: number | null;
  /** Login of the author; null when the account was deleted ("ghost"). */
  author: string | null;
  /** OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, …: how much to trust the text. */
  authorAssociation: string;
  body: string;
  url: string;
}

export interface IssueComment extends Authored {
  createdAt: string;
}

export interface Review extends Authored {
  state: ReviewState;
  submittedAt: string | null;
}

export interface ReviewThreadComment extends Authored {
  /** The thread this inline comment belongs to (node id). */
  threadId: string;
  path: string;
  /** Line in the current diff; null when the comment is outdated. */
  line: number | null;
  createdAt: string;
}

export interface CheckRun {
  id: number | null;
  name: string;
  status: CheckRunStatus;
  conclusion: CheckRunConclusion | null;
  url: string;
  /** The last lines of its log, when the forge hands them out with the failure (GitLab's job traces). */
  logTail?: string;
}

export interface CommitStatus {
  context: string;
  state: CommitStatusState;
  description: string | null;
  url: string | null;
}

/** One pull request as the GraphQL batch saw it. */
export interface PullRequestSnapshot {
  kind: 'snapshot';
  ref: PullRequestRef;
  /** The repository as GitHub spells it (`owner/name`). */
  repository: string;
  number: number;
  title: string;
  url: string;
  state: PullRequestState;
  isDraft: boolean;
  /** The manager's status: merged / closed, else draft / open. */
  status: PullRequestStatus;
  baseBranch: string;
  headBranch: string;
  headSha: string;
  mergeable: Mergeable;
  updatedAt: string;
  /** Oldest first, at most SNAPSHOT_LIMITS.comments. */
  comments: IssueComment[];
  /** Submitted reviews, oldest first, at most SNAPSHOT_LIMITS.reviews. */
  reviews: Review[];
  /** Inline comments of the newest review threads, thread by thread, oldest first. */
  reviewComments: ReviewThreadComment[];
  /** Check runs of the head commit (null when GitHub reports no checks for it). */
  checkRuns: CheckRun[];
  /** Commit statuses of the head commit. */
  statuses: CommitStatus[];
  /** GitHub's combined state of checks and statuses, or null when there are none. */
  checksState: CommitStatusState | null;
}

/**
 * A PR that could not be read while others may have been: `not_found` (deleted, renamed, the token
 * cannot see it, or not a valid ref), `forbidden`, `failed` (any other GraphQL error for it, or its
 * whole batch failed on the server side after retries) or `skipped` (not asked: an earlier batch hit
 * a failure that stops the call, e.g. the rate limit). Batch-level entries carry that failure's code.
 */
export interface PullRequestFetchError {
  kind: 'error';
  ref: PullRequestRef;
  code: 'not_found' | 'forbidden' | 'failed' | 'skipped';
  message: string;
  cause?: ForgeErrorCode;
}

export type PullRequestResult = PullRequestSnapshot | PullRequestFetchError;

/**
 * The cheap view of one pull request, for change detection (see pull-request-summary.ts): scalar
 * fields and counts only, about a twentieth of a snapshot's budget points. The reconciler keeps the
 * last `fingerprint` per PR and fetches a full snapshot only when it differs.
 */
export interface PullRequestSummary {
  kind: 'summary';
  ref: PullRequestRef;
  /** The repository as GitHub spells it (`owner/name`). */
  repository: string;
  number: number;
  state: PullRequestState;
  isDraft: boolean;
  status: PullRequestStatus;
  headSha: string;
  mergeable: Mergeable;
  updatedAt: string;
  /**
   * A stable string of every change-relevant field: equal strings mean nothing the reconciler acts on
   * changed (state, draft, merge, head, mergeability, comments, reviews, threads, checks, statuses).
   */
  fingerprint: string;
}

export type PullRequestSummaryResult = PullRequestSummary | PullRequestFetchError;

/** The REST view of one pull request (`GET /repos/{owner}/{repo}/pulls/{number}`). */
export interface RestPullRequestFields {
  repository: string;
  number: number;
  title: string;
  url: string;
  state: PullRequestState;
  isDraft: boolean;
  status: PullRequestStatus;
  baseBranch: string;
  headBranch: string;
  headSha: string;
  /** null while GitHub is still computing it. */
  mergeable: boolean | null;
  /** clean, dirty (conflicts), blocked, behind, unstable, unknown, … */
  mergeableState: string;
  updatedAt: string;
}

/** One rate-limit budget as last reported by GitHub. */
export interface RateLimitBudget {
  limit: number;
  remaining: number;
  /** When the budget refills (ISO). */
  resetAt: string;
  /** Points the last GraphQL query cost (GraphQL budget only). */
  lastCost?: number;
  /** When these figures were observed (ISO). */
  observedAt: string;
}

/** The last figures seen per budget; null until a response reported them. */
export interface RateLimitStatus {
  core: RateLimitBudget | null;
  graphql: RateLimitBudget | null;
}
