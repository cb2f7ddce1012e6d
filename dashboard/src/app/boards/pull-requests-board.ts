import { ChangeDetectionStrategy, Component, computed, effect, inject, signal, untracked } from '@angular/core';
import { RouterLink } from '@angular/router';
import type { components } from '@libs/api-client';

import { Api } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { PULL_REQUEST_COLUMNS } from '../core/api-types';
import { autoReviewBadge, isStale, latestReviews } from '../core/reviews';
import { inWindow } from '../core/stores/created-window';
import { PullRequestsStore } from '../core/stores/pull-requests-store';
import { RequirementsStore } from '../core/stores/requirements-store';
import { BoardColumn } from './board-column';
import { BoardFilter, BoardFilterState } from './board-filter';

@Component({
  selector: 'am-pull-requests-board',
  imports: [BoardFilter, BoardColumn, RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <h1 class="sr-only">{{ t('nav.pullRequests') }}</h1>
    <am-board-filter />
    @if (github(); as check) {
      <!-- Without a token nothing here changes by itself: say so where the person looks for it. -->
      <section class="panel setup-panel" role="status" data-testid="github-setup" [attr.data-status]="check.status">
        <strong>{{ t('pr.github') }}</strong>
        <p>{{ check.detail }}</p>
        @if (check.fix) {
          <p>→ {{ check.fix }}</p>
        }
        <p class="muted small">{{ t('pr.githubRestart') }} <code>agent-manager doctor</code></p>
      </section>
    }
    <div class="board" data-testid="pull-requests-board">
      @for (col of columns(); track col.status) {
        <am-board-column [key]="col.status" [label]="t(keyOf('pr', col.status))" [count]="col.items.length">
          <ul>
            @for (pr of col.items; track pr.id) {
              <li class="card" [attr.data-pull-request-id]="pr.id">
                <div class="title">
                  <a [href]="pr.url" target="_blank" rel="noopener noreferrer"
                    >{{ pr.repository }}{{ pr.forge === 'gitlab' ? '!' : '#' }}{{ pr.number }}</a
                  >
                  {{ pr.title }}
                </div>
                <div class="meta">
                  <code>{{ pr.headBranch }} → {{ pr.baseBranch }}</code>
                  @if (autoReviewBadge(pr); as loop) {
                    <span
                      class="badge"
                      [class.ok]="loop.ok"
                      [class.warn]="pr.autoReview.state === 'max_rounds'"
                      data-testid="auto-review-state"
                      >{{ t(loop.key, loop.params) }}</span
                    >
                  }
                  @if (reviews().get(pr.id); as review) {
                    <span
                      class="badge"
                      [class.ok]="review.status === 'succeeded'"
                      [class.danger]="review.status === 'failed'"
                      >{{ t('card.review', { s: t(keyOf('run', review.status)) }) }}</span
                    >
                    @if (isStale(review, pr)) {
                      <span class="badge warn">{{ t('card.stale') }}</span>
                    }
                  }
                </div>
                <div class="meta">
                  <a [routerLink]="['/requirements', pr.requirementId]">{{
                    requirements.requirements().get(pr.requirementId)?.title ?? pr.requirementId
                  }}</a>
                </div>
              </li>
            }
          </ul>
        </am-board-column>
      }
    </div>
  `,
})
export class PullRequestsBoard {
  protected readonly requirements = inject(RequirementsStore);
  private readonly store = inject(PullRequestsStore);
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  private readonly filter = inject(BoardFilterState);
  protected readonly isStale = isStale;
  protected readonly autoReviewBadge = autoReviewBadge;
  protected readonly reviews = computed(() => latestReviews(this.store.reviewRequests()));
  private readonly api = inject(Api);
  /** doctor's GitHub check, when it is not fine (no token, a rejected one): the server already knows. */
  protected readonly github = signal<components['schemas']['DoctorCheckDto'] | null>(null);

  protected readonly columns = computed(() => {
    const window = this.requirements.window();
    const items = [...this.store.pullRequests().values()]
      .filter(
        (pr) =>
          inWindow(pr.createdAt, window) &&
          this.filter.matches([
            pr.title,
            pr.repository,
            String(pr.number),
            pr.headBranch,
            this.requirements.requirements().get(pr.requirementId)?.title,
          ]),
      )
      .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1));
    return PULL_REQUEST_COLUMNS.map((status) => ({ items: items.filter((pr) => pr.status === status), status }));
  });

  /** PRs whose reviews were read (once each: later reviews arrive as events). */
  private readonly reviewsRead = new Set<string>();

  constructor() {
    // Quiet: a manager without /api/doctor just shows no notice.
    this.api
      .call(this.api.client.GET('/api/doctor', { params: { query: {} } }), true)
      .then((report) => this.github.set(report.checks.find((c) => c.id === 'github' && c.status !== 'ok') ?? null))
      .catch(() => undefined);
    // Review state is per PR; read it for the most recent PRs that can still be reviewed. As an
    // effect: on a reload of this page the PRs arrive after it opened, and their reviews with them.
    effect(() => {
      const reviewable = [...this.store.pullRequests().values()].filter(
        (pr) => pr.status === 'open' || pr.status === 'draft',
      );
      untracked(() => {
        for (const pr of reviewable.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1)).slice(0, 100)) {
          if (!this.reviewsRead.has(pr.id)) {
            this.reviewsRead.add(pr.id);
            void this.store.readReviewRequests(pr.id).catch(() => undefined);
          }
        }
      });
    });
  }
}
