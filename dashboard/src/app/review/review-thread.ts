import { ChangeDetectionStrategy, Component, inject, input } from '@angular/core';

import { I18n } from '../core/i18n';
import type { ReviewComment } from '../core/api-types';
import { ReviewState } from './review-state';

/**
 * One comment with its answers, under the line it ends on: a draft can be deleted, a sent thread
 * resolved or reopened. An outdated one shows the lines it was written on (they changed since).
 */
@Component({
  selector: 'am-review-thread',
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    :host {
      display: block;
      margin: 4px 8px 6px;
      padding: 6px 10px;
      border: 1px solid var(--am-border);
      border-left: 3px solid var(--am-accent);
      border-radius: var(--am-radius);
      background: var(--am-surface);
      color: var(--am-text);
      font-family: system-ui, sans-serif;
      font-size: 13px;
    }
    :host([data-state='resolved']) {
      border-left-color: var(--am-muted);
    }
    p {
      margin: 2px 0;
      white-space: pre-wrap;
    }
    pre {
      margin: 4px 0;
      color: var(--am-muted);
      white-space: pre-wrap;
    }
  `,
  host: { '[attr.data-state]': 'comment().state', 'data-testid': 'review-thread' },
  template: `
    <div class="row">
      <strong>{{ t(comment().author.kind === 'agent' ? 'lineReview.agentSaid' : 'lineReview.personSaid') }}</strong>
      <span class="muted small">{{ where() }}</span>
      <span class="spacer"></span>
      <span class="badge" data-testid="review-thread-state">{{ t(stateKey()) }}</span>
      @if (comment().state === 'draft') {
        <button
          type="button"
          class="small ghost"
          (click)="state.deleteDraft(comment())"
          data-testid="review-draft-delete"
        >
          {{ t('lineReview.delete') }}
        </button>
      } @else {
        <button
          type="button"
          class="small ghost"
          (click)="state.toggleResolved(comment())"
          data-testid="review-resolve"
        >
          {{ t(comment().state === 'resolved' ? 'lineReview.reopen' : 'lineReview.resolve') }}
        </button>
      }
    </div>
    @if (showExcerpt()) {
      <pre>{{ comment().anchor.excerpt }}</pre>
    }
    <p>{{ comment().body }}</p>
    @for (r of comment().replies; track r.id) {
      <p class="reply" data-testid="review-reply">
        <strong>{{ t(r.author.kind === 'agent' ? 'lineReview.agentSaid' : 'lineReview.personSaid') }}</strong>
        {{ r.body }}
      </p>
    }
  `,
})
export class ReviewThread {
  readonly comment = input.required<ReviewComment>();
  readonly showExcerpt = input(false);
  protected readonly t = inject(I18n).t;
  protected readonly state = inject(ReviewState);

  protected stateKey(): 'reviewView.draft' | 'lineReview.resolved' | 'lineReview.open' {
    const state = this.comment().state;
    return state === 'draft' ? 'reviewView.draft' : state === 'resolved' ? 'lineReview.resolved' : 'lineReview.open';
  }

  protected where(): string {
    const c = this.comment();
    const lines = c.endLine === c.line ? `${c.line}` : `${c.line}–${c.endLine}`;
    return `${c.path}:${lines}${c.side === 'old' ? ` (${this.t('lineReview.before')})` : ''}`;
  }
}
