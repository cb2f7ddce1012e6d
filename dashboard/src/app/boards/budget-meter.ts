import { ChangeDetectionStrategy, Component, computed, inject, input } from '@angular/core';

import { I18n } from '../core/i18n';
import type { Requirement } from '../core/api-types';

/** Tokens as a budget counts them: input (cache reads included) plus output, over the Requirement's tree. */
export const budgetTokens = (r: Requirement) => r.treeUsage.inputTokens + r.treeUsage.outputTokens;
/** Tokens its own runs spent (the tree's less what the Requirements proposed below it spent). */
export const ownTokens = (r: Requirement) => r.usage.inputTokens + r.usage.outputTokens;

/**
 * What a Requirement's tree spent against its budget, for a card: "8.2k / 10k tokens" (and the
 * cost against a cost limit) with a bar filled to the larger share, in the danger colour once
 * reached. The budget caps the tree (its own runs and those of the Requirements its agents
 * proposed below it), so when those spent too, its own share follows: "· own 3.1k".
 * Nothing for a Requirement without a budget.
 */
@Component({
  selector: 'am-budget-meter',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    @if (meter(); as m) {
      <span
        class="budget-meter"
        [class.reached]="m.reached"
        data-testid="budget-meter"
        [attr.data-reached]="m.reached"
        [title]="m.title"
      >
        <span class="budget-bar" aria-hidden="true"><span class="budget-fill" [style.width.%]="m.percent"></span></span>
        <span class="budget-text">{{ m.text }}</span>
        @if (m.own; as own) {
          <span class="budget-own" data-testid="budget-own">· {{ own }}</span>
        }
      </span>
    }
  `,
})
export class BudgetMeter {
  readonly requirement = input.required<Requirement>();
  private readonly i18n = inject(I18n);

  protected readonly meter = computed(() => {
    const r = this.requirement();
    const budget = r.budget;
    if (!budget) {
      return null;
    }
    const compact = new Intl.NumberFormat(this.i18n.locale(), { maximumFractionDigits: 1, notation: 'compact' });
    const full = new Intl.NumberFormat(this.i18n.locale());
    const parts: string[] = [];
    const details: string[] = [];
    let share = 0;
    if (budget.maxTokens !== null) {
      const used = budgetTokens(r);
      share = Math.max(share, used / budget.maxTokens);
      parts.push(
        this.i18n.t('budget.tokens', {
          max: compact.format(budget.maxTokens).toLowerCase(),
          used: compact.format(used).toLowerCase(),
        }),
      );
      details.push(this.i18n.t('budget.tokens', { max: full.format(budget.maxTokens), used: full.format(used) }));
    }
    if (budget.maxCostUsd !== null) {
      const cost = r.treeUsage.costUsd ?? 0;
      share = Math.max(share, cost / budget.maxCostUsd);
      const text = `${dollars(cost)} / ${dollars(budget.maxCostUsd)}`;
      parts.push(text);
      details.push(text);
    }
    // Its own share, once the Requirements below it spent something of the budget too.
    const below = budgetTokens(r) > ownTokens(r) || (r.treeUsage.costUsd ?? 0) > (r.usage.costUsd ?? 0);
    const own = below ? this.i18n.t('budget.own', { n: compact.format(ownTokens(r)).toLowerCase() }) : null;
    if (below) {
      details.push(this.i18n.t('budget.ownDetail', { n: full.format(ownTokens(r)) }));
    }
    const reached = r.budgetReachedAt !== null || share >= 1;
    return {
      own,
      percent: Math.min(100, Math.round(share * 100)),
      reached,
      text: parts.join(' · '),
      title: `${this.i18n.t(reached ? 'card.budgetReached' : 'budget.title')}: ${details.join(', ')}`,
    };
  });
}

function dollars(n: number): string {
  return `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;
}
