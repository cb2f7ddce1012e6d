import { ChangeDetectionStrategy, Component, effect, inject, input, signal, untracked } from '@angular/core';

import { Api } from '../core/api';
import { I18n } from '../core/i18n';
import type { ReviewComment } from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';

/**
 * The person's review in progress (issue 46 §1–2): the draft comments on lines of the Changes tab,
 * each removable, and an overall comment, sent to the agent as one message ("Send review (n)"),
 * delivered as a reply is. Below it the threads already sent, with the agent's answers, resolved
 * and reopened here. `version` changes whenever the parent added a draft (it reads them again).
 */
@Component({
  selector: 'am-review-drafts',
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    :host {
      display: block;
    }
    section {
      margin-top: 1rem;
    }
    h3 {
      font-size: 0.95rem;
      margin: 0 0 0.4rem;
    }
    form {
      margin-top: 0.5rem;
    }
    textarea {
      width: 100%;
    }
  `,
  template: `
    @if (drafts().length > 0) {
      <section class="review-drafts" data-testid="review-drafts" [attr.aria-label]="t('lineReview.title')">
        <h3>{{ t('lineReview.title') }}</h3>
        <ul class="list">
          @for (c of drafts(); track c.id) {
            <li class="row" data-testid="review-draft">
              <code>{{ where(c) }}</code>
              <span class="spacer">{{ c.body }}</span>
              @if (c.outdated) {
                <span class="badge">{{ t('lineReview.outdated') }}</span>
              }
              <button type="button" class="small ghost" (click)="remove(c)" [attr.aria-label]="t('lineReview.delete')">
                {{ t('lineReview.delete') }}
              </button>
            </li>
          }
        </ul>
        <form (submit)="$event.preventDefault(); send()">
          <label for="am-review-body">{{ t('lineReview.overall') }}</label>
          <textarea
            id="am-review-body"
            rows="2"
            maxlength="10000"
            [value]="overall()"
            (input)="overall.set($any($event.target).value)"
            (keydown.control.enter)="send()"
            data-testid="review-body"
          ></textarea>
          <div class="row">
            <span class="spacer"></span>
            <button type="submit" class="primary" [disabled]="sending()" data-testid="review-send">
              {{ t('lineReview.send', { n: drafts().length }) }}
            </button>
          </div>
        </form>
      </section>
    }
    @if (threads().length > 0) {
      <section class="review-threads" data-testid="review-threads" [attr.aria-label]="t('lineReview.threads')">
        <h3>{{ t('lineReview.threads') }}</h3>
        <ul class="list">
          @for (c of threads(); track c.id) {
            <li data-testid="review-thread" [attr.data-state]="c.state">
              <div class="row">
                <code>{{ where(c) }}</code>
                <span class="spacer">{{ c.body }}</span>
                @if (c.outdated) {
                  <span class="badge">{{ t('lineReview.outdated') }}</span>
                }
                <span class="badge">{{ t(c.state === 'resolved' ? 'lineReview.resolved' : 'lineReview.open') }}</span>
                <button type="button" class="small ghost" (click)="toggle(c)" data-testid="review-resolve">
                  {{ t(c.state === 'resolved' ? 'lineReview.reopen' : 'lineReview.resolve') }}
                </button>
              </div>
              @for (r of c.replies; track r.id) {
                <p class="muted small" data-testid="review-reply">
                  {{ t(r.author.kind === 'agent' ? 'lineReview.agentSaid' : 'lineReview.personSaid') }} {{ r.body }}
                </p>
              }
            </li>
          }
        </ul>
      </section>
    }
  `,
})
export class ReviewDrafts {
  readonly requirementId = input.required<string>();
  /** Bumped by the parent after it added a draft, or when the agent's work was imported again. */
  readonly version = input(0);
  protected readonly t = inject(I18n).t;
  private readonly api = inject(Api);
  private readonly requirements = inject(RequirementsStore);
  protected readonly drafts = signal<ReviewComment[]>([]);
  protected readonly threads = signal<ReviewComment[]>([]);
  protected readonly overall = signal('');
  protected readonly sending = signal(false);

  constructor() {
    effect(() => {
      const id = this.requirementId();
      this.version();
      untracked(() => void this.load(id));
    });
  }

  protected where(c: ReviewComment): string {
    const lines = c.endLine === c.line ? `${c.line}` : `${c.line}-${c.endLine}`;
    return `${c.path}:${lines}${c.side === 'old' ? ` (${this.t('lineReview.before')})` : ''}`;
  }

  protected async remove(c: ReviewComment): Promise<void> {
    await this.api.call(
      this.api.client.DELETE('/api/requirements/{id}/review-comments/{commentId}', {
        params: { path: { commentId: c.id, id: this.requirementId() } },
      }),
    );
    await this.load(this.requirementId());
  }

  protected async send(): Promise<void> {
    if (this.sending() || this.drafts().length === 0) {
      return;
    }
    this.sending.set(true);
    try {
      const body = this.overall().trim();
      const sent = await this.api.call(
        this.api.client.POST('/api/requirements/{id}/reviews', {
          body: body ? { body } : {},
          params: { path: { id: this.requirementId() } },
        }),
      );
      this.requirements.accept(sent.requirement);
      this.overall.set('');
    } catch {
      // Shown by the API service; the drafts and the overall comment stay for another try.
    } finally {
      this.sending.set(false);
    }
    await this.load(this.requirementId());
  }

  protected async toggle(c: ReviewComment): Promise<void> {
    await this.api.call(
      this.api.client.PATCH('/api/requirements/{id}/review-comments/{commentId}', {
        body: { state: c.state === 'resolved' ? 'open' : 'resolved' },
        params: { path: { commentId: c.id, id: this.requirementId() } },
      }),
    );
    await this.load(this.requirementId());
  }

  private async load(id: string): Promise<void> {
    const { data } = await this.api.client.GET('/api/requirements/{id}/review-comments', {
      params: { path: { id } },
    });
    if (id !== this.requirementId() || !data) {
      return;
    }
    this.drafts.set(data.items.filter((c) => c.state === 'draft'));
    this.threads.set(data.items.filter((c) => c.state !== 'draft'));
  }
}
