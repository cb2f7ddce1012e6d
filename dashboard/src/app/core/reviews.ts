import type { PullRequest, ReviewRequest } from './api-types';

/** The latest review request of each PR (by creation time). */
export function latestReviews(reviews: ReadonlyMap<string, ReviewRequest>): Map<string, ReviewRequest> {
  const latest = new Map<string, ReviewRequest>();
  for (const r of reviews.values()) {
    const known = latest.get(r.pullRequestId);
    if (!known || known.createdAt < r.createdAt) {
      latest.set(r.pullRequestId, r);
    }
  }
  return latest;
}

/** Stale when the server says so, or (older servers) when the PR's head moved past the reviewed commit. */
export const isStale = (review: ReviewRequest, pr: PullRequest): boolean =>
  review.stale ?? review.targetHeadSha !== pr.headSha;

type AutoReviewKey = 'card.autoReview' | 'card.autoReviewWaiting' | 'card.autoReviewClean' | 'card.autoReviewMaxRounds';

/** What a PR card says about its review loop ("Auto review round 2/3", "clean after 3 rounds"); null when off. */
export function autoReviewBadge(
  pr: PullRequest,
): { key: AutoReviewKey; params: { max: string | number; n: number }; ok: boolean } | null {
  const { maxRounds, round, state } = pr.autoReview;
  const params = { max: maxRounds ?? '?', n: round };
  switch (state) {
    case 'off':
      return null;
    case 'reviewing':
      return { key: 'card.autoReview', ok: false, params };
    case 'waiting_for_push':
      return { key: 'card.autoReviewWaiting', ok: false, params };
    case 'clean':
      return { key: 'card.autoReviewClean', ok: true, params };
    case 'max_rounds':
      return { key: 'card.autoReviewMaxRounds', ok: false, params };
  }
}
