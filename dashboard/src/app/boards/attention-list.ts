import { ChangeDetectionStrategy, Component, computed, inject } from '@angular/core';
import { RouterLink } from '@angular/router';

import { type AttentionReason, attentionOf, firstLine } from '../core/attention';
import { BudgetMeter } from './budget-meter';
import { I18n, keyOf } from '../core/i18n';
import type { Requirement } from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';

const ORDER: readonly AttentionReason[] = ['failed', 'budget', 'paused', 'confirm'];

/** Every Requirement that waits for a person, in one place: failures first, then budgets reached, then pauses, then work to confirm. */
@Component({
  selector: 'am-attention-list',
  imports: [BudgetMeter, RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <section class="attention-page" data-testid="attention-list">
      <h1>{{ t('attention.title') }}</h1>
      @for (group of groups(); track group.reason) {
        <h2 class="section-head" [attr.data-reason]="group.reason">
          {{ t(keyOf('attention', group.reason)) }} <span class="badge">{{ group.items.length }}</span>
        </h2>
        <ul class="list">
          @for (r of group.items; track r.id) {
            <li [attr.data-requirement-id]="r.id" [attr.data-reason]="group.reason">
              <a class="title" [routerLink]="['/requirements', r.id]">{{ r.title }}</a>
              <div class="meta muted">
                @if (group.reason === 'failed') {
                  <span class="badge danger">{{ t('failed.card') }}</span> <span>{{ short(r.session.lastError) }}</span>
                } @else if (group.reason === 'budget') {
                  <span class="badge danger">{{ t('card.budgetReached') }}</span> <am-budget-meter [requirement]="r" />
                } @else if (group.reason === 'paused') {
                  <span class="badge warn">{{ t('card.paused') }}</span>
                  <span>{{ t('card.pending', { n: r.session.pendingMessageCount }) }}</span>
                }
                <time [attr.datetime]="r.updatedAt">{{ i18n.dateTime(r.updatedAt) }}</time>
              </div>
            </li>
          }
        </ul>
      } @empty {
        <p class="empty">{{ t('attention.none') }}</p>
      }
    </section>
  `,
})
export class AttentionList {
  private readonly store = inject(RequirementsStore);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly short = (text: string | null) => firstLine(text);

  protected readonly groups = computed(() => {
    const by = new Map<AttentionReason, Requirement[]>();
    for (const r of this.store.requirements().values()) {
      const reason = attentionOf(r);
      if (reason) {
        by.set(reason, [...(by.get(reason) ?? []), r]);
      }
    }
    return ORDER.filter((reason) => by.has(reason)).map((reason) => ({
      items: (by.get(reason) ?? []).sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1)),
      reason,
    }));
  });
}
