import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { CreateReviewRequest, PullRequest, ReviewRequest } from '../api-types';
import { LIVE_STATE } from './live-state-token';

/** Pull requests and the review requests made on them. */
@Injectable({ providedIn: 'root' })
export class PullRequestsStore {
  private readonly api = inject(Api);
  private readonly live = inject(LIVE_STATE);
  private readonly pullRequestsSig = signal<ReadonlyMap<string, PullRequest>>(new Map());
  private readonly reviewsSig = signal<ReadonlyMap<string, ReviewRequest>>(new Map());

  readonly pullRequests = this.pullRequestsSig.asReadonly();
  readonly reviewRequests = this.reviewsSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.pullRequests) {
      this.pullRequestsSig.set(this.live.pullRequests.items);
    }
    if (changes.reviewRequests) {
      this.publishReviews();
    }
  }

  /** Every pull request; each page shows as it arrives. */
  async readPullRequests(): Promise<void> {
    await this.api.all(
      (cursor) =>
        this.api.call(
          this.api.client.GET('/api/pull-requests', { params: { query: { cursor, limit: this.api.pageSize } } }),
        ),
      (items) =>
        this.live.pullRequests.upsertMany(items, 'snapshot') && this.pullRequestsSig.set(this.live.pullRequests.items),
    );
  }

  /** One PR's review requests (quietly: an older server has no such endpoint). */
  async readReviewRequests(pullRequestId: string): Promise<void> {
    const { items } = await this.api.call(
      this.api.client.GET('/api/review-requests', { params: { query: { limit: this.api.pageSize, pullRequestId } } }),
      true,
    );
    if (this.live.reviewRequests.upsertMany(items, 'snapshot')) {
      this.publishReviews();
    }
  }

  /** The review request the server answers with merges as a snapshot (its own event follows). */
  async requestReview(pullRequestId: string, body: CreateReviewRequest): Promise<void> {
    const result = await this.api.call(
      this.api.client.POST('/api/pull-requests/{id}/review-requests', {
        body,
        params: { path: { id: pullRequestId } },
      }),
    );
    if (this.live.reviewRequests.upsert(result.reviewRequest, 'snapshot')) {
      this.publishReviews();
    }
  }

  private publishReviews(): void {
    this.reviewsSig.set(this.live.reviewRequests.items);
  }
}
