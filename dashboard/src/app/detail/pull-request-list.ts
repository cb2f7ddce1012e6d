import { ChangeDetectionStrategy, Component, computed, effect, inject, input, signal, untracked } from '@angular/core';

import { I18n, keyOf } from '../core/i18n';
import { PROVIDERS, REASONING_EFFORTS, type Provider, type PullRequest, type ReasoningEffort } from '../core/api-types';
import { autoReviewBadge, isStale, latestReviews } from '../core/reviews';
import { PullRequestsStore } from '../core/stores/pull-requests-store';

/** A Requirement's PRs, each with its latest review and a "request review" form. */
@Component({
  selector: 'am-pull-request-list',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    @if (pullRequests().length === 0) {
      <p class="empty">{{ t('detail.noPullRequests') }}</p>
    }
    <ul class="list">
      @for (pr of pullRequests(); track pr.id) {
        <li [attr.data-pull-request-id]="pr.id">
          <div class="row">
            <a [href]="pr.url" target="_blank" rel="noopener noreferrer"
              >{{ pr.repository }}{{ pr.forge === 'gitlab' ? '!' : '#' }}{{ pr.number }}</a
            >
            <span class="badge">{{ t(keyOf('pr', pr.status)) }}</span>
            @if (reviews().get(pr.id); as review) {
              <span
                class="badge"
                [class.ok]="review.status === 'succeeded'"
                [class.danger]="review.status === 'failed'"
                data-testid="review-state"
                >{{ t('card.review', { s: t(keyOf('run', review.status)) }) }}</span
              >
              @if (isStale(review, pr)) {
                <span class="badge warn">{{ t('card.stale') }}</span>
              }
            }
            @if (autoReviewBadge(pr); as loop) {
              <span
                class="badge"
                [class.ok]="loop.ok"
                [class.warn]="pr.autoReview.state === 'max_rounds'"
                data-testid="auto-review-state"
                >{{ t(loop.key, loop.params) }}</span
              >
            }
            <span class="spacer"></span>
            @if (pr.status === 'open') {
              <button
                type="button"
                class="small"
                (click)="formFor.set(formFor() === pr.id ? null : pr.id)"
                [attr.aria-expanded]="formFor() === pr.id"
                data-testid="request-review"
              >
                {{ t('action.requestReview') }}
              </button>
            }
          </div>
          <div class="muted">{{ pr.title }}</div>
          @if (formFor() === pr.id) {
            <form
              class="stack"
              style="margin-top: 0.4rem; gap: 0.4rem"
              (submit)="onRequest($event, pr)"
              [attr.aria-label]="t('review.title')"
            >
              <div class="row">
                <label>
                  {{ t('detail.provider') }}
                  <select (change)="provider.set($any($event.target).value)">
                    @for (p of providers; track p) {
                      <option [value]="p" [selected]="p === provider()">{{ p }}</option>
                    }
                  </select>
                </label>
                <label>
                  {{ t('detail.model') }}
                  <input [placeholder]="t('detail.default')" (input)="model.set($any($event.target).value)" />
                </label>
                <label>
                  {{ t('detail.effort') }}
                  <select (change)="effort.set($any($event.target).value)">
                    <option value="">{{ t('detail.default') }}</option>
                    @for (e of efforts; track e) {
                      <option [value]="e">{{ e }}</option>
                    }
                  </select>
                </label>
              </div>
              <label>
                {{ t('review.prompt') }}
                <textarea
                  rows="2"
                  (input)="prompt.set($any($event.target).value)"
                  data-testid="review-prompt"
                ></textarea>
              </label>
              <div class="row">
                <span class="spacer"></span>
                <button type="submit" class="primary small" [disabled]="busy()" data-testid="review-submit">
                  {{ t('action.requestReview') }}
                </button>
              </div>
            </form>
          }
        </li>
      }
    </ul>
  `,
})
export class PullRequestList {
  readonly requirementId = input.required<string>();
  private readonly store = inject(PullRequestsStore);
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  protected readonly providers = PROVIDERS;
  protected readonly efforts = REASONING_EFFORTS;
  protected readonly isStale = isStale;
  protected readonly autoReviewBadge = autoReviewBadge;
  protected readonly formFor = signal<string | null>(null);
  protected readonly provider = signal<Provider>('codex');
  protected readonly model = signal('');
  protected readonly effort = signal<ReasoningEffort | ''>('');
  protected readonly prompt = signal('');
  protected readonly busy = signal(false);

  protected readonly pullRequests = computed(() =>
    [...this.store.pullRequests().values()]
      .filter((pr) => pr.requirementId === this.requirementId())
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1)),
  );
  protected readonly reviews = computed(() => latestReviews(this.store.reviewRequests()));

  constructor() {
    // Review state for each PR once it is known (404 from an older server reads as "none").
    const read = new Set<string>();
    effect(() => {
      for (const pr of this.pullRequests()) {
        if (!read.has(pr.id)) {
          read.add(pr.id);
          untracked(() => void this.store.readReviewRequests(pr.id).catch(() => undefined));
        }
      }
    });
  }

  protected async onRequest(event: Event, pr: PullRequest): Promise<void> {
    event.preventDefault();
    this.busy.set(true);
    try {
      const prompt = this.prompt().trim();
      await this.store.requestReview(pr.id, {
        provider: this.provider(),
        ...(this.model().trim() ? { model: this.model().trim() } : {}),
        ...(this.effort() ? { reasoningEffort: this.effort() as ReasoningEffort } : {}),
        ...(prompt ? { prompt } : {}),
      });
      this.formFor.set(null);
    } catch {
      // shown by the API service
    } finally {
      this.busy.set(false);
    }
  }
}
