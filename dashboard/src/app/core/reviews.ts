import type { PullRequest, ReviewRequest } from './models';

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
export const isStale = (review: ReviewRequest, pr: PullRequest): boolean => review.stale ?? review.targetHeadSha !== pr.headSha;
