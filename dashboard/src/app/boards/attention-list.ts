import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  computed,
  effect,
  inject,
  signal,
  viewChild,
  viewChildren,
} from '@angular/core';
import { Router, RouterLink } from '@angular/router';

import type { AttentionItem, AttentionReason } from '@libs/contracts';

import { BudgetMeter, budgetTokens } from './budget-meter';
import { I18n, keyOf } from '../core/i18n';
import { AttentionStore } from '../core/stores/attention-store';
import { shortcutAllowed } from '../core/shortcuts';
import { ConversationStore } from '../core/stores/conversation-store';
import { RequirementsStore } from '../core/stores/requirements-store';

/** How an item is shown: the danger colour for what stopped, the warning one for what waits. */
const TONE: Record<AttentionReason, 'danger' | 'warn' | 'ok'> = {
  budget_reached: 'danger',
  ci_failed: 'danger',
  confirm_done: 'ok',
  conflict: 'warn',
  dependency_cancelled: 'warn',
  land_refused: 'danger',
  network_blocked: 'warn',
  queue_blocked: 'warn',
  review_ready: 'ok',
  run_failed: 'danger',
  runner_offline: 'warn',
  waiting_reply: 'warn',
};

/**
 * Needs you (issue 47 §2): every reason a Requirement waits for the person, oldest first, each
 * with what answers it right here — a reply, confirming it done, a start, a raised budget — and
 * the keyboard: `j`/`k` move, Enter opens the card, `r` answers, `g n` (anywhere) comes here.
 */
@Component({
  selector: 'am-attention-list',
  imports: [BudgetMeter, RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  templateUrl: './attention-list.html',
  styleUrl: './attention-list.css',
  host: { '(document:keydown)': 'onKey($event)' },
})
export class AttentionList {
  private readonly store = inject(AttentionStore);
  private readonly requirements = inject(RequirementsStore);
  private readonly conversations = inject(ConversationStore);
  private readonly router = inject(Router);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly tone = TONE;
  private readonly rows = viewChildren<ElementRef<HTMLElement>>('row');
  private readonly answer = viewChild<ElementRef<HTMLTextAreaElement>>('answer');
  private readonly other = viewChild<ElementRef<HTMLTextAreaElement>>('other');

  constructor() {
    // An opened reply box takes the focus (`r`, or its button), as a person starts typing at once.
    effect(() => (this.answer() ?? this.other())?.nativeElement.focus());
  }

  protected readonly items = computed(() =>
    this.store.items().map((item) => ({ item, requirement: this.store.requirement(item.requirementId) })),
  );
  /** The item whose action is in progress (its buttons wait), or null. */
  protected readonly busy = signal<string | null>(null);
  /** The item whose reply box is open. */
  protected readonly replying = signal<string | null>(null);

  protected title(item: AttentionItem): string {
    return this.store.requirement(item.requirementId)?.title ?? item.requirementId;
  }

  /** A raised budget: twice what its tree has spent, at least twice the old limit. */
  protected raisedTokens(item: AttentionItem): number {
    const r = this.store.requirement(item.requirementId);
    return r ? Math.max(budgetTokens(r) * 2, (r.budget?.maxTokens ?? 0) * 2, 10_000) : 10_000;
  }

  protected async act(item: AttentionItem, action: () => Promise<unknown>): Promise<void> {
    this.busy.set(item.id);
    try {
      await action();
      this.replying.set(null);
    } catch {
      // The API's notifier said what happened; the item stays until its cause clears.
    } finally {
      this.busy.set(null);
    }
  }

  protected reply(item: AttentionItem, text: string): Promise<void> {
    const message = text.trim();
    return message === ''
      ? Promise.resolve()
      : this.act(item, () => this.conversations.reply(item.requirementId, { message }));
  }

  protected confirm(item: AttentionItem): Promise<void> {
    return this.act(item, () => this.requirements.confirm(item.requirementId));
  }

  protected start(item: AttentionItem): Promise<void> {
    return this.act(item, () => this.requirements.start(item.requirementId));
  }

  protected raise(item: AttentionItem, tokens: number): Promise<void> {
    return this.act(item, () =>
      this.requirements.update(item.requirementId, {
        budget: {
          maxCostUsd: this.store.requirement(item.requirementId)?.budget?.maxCostUsd ?? null,
          maxTokens: tokens,
        },
      }),
    );
  }

  protected onKey(event: KeyboardEvent): void {
    if (!shortcutAllowed(event)) {
      return;
    }
    const rows = this.rows().map((r) => r.nativeElement);
    const at = rows.findIndex((row) => row.contains(document.activeElement));
    const focus = (i: number) => rows[Math.max(0, Math.min(rows.length - 1, i))]?.focus();
    const item = at >= 0 ? this.store.items()[at] : undefined;
    if (event.key === 'j' || event.key === 'k') {
      focus(at < 0 ? 0 : at + (event.key === 'j' ? 1 : -1));
    } else if (event.key === 'Enter' && item && rows[at] === document.activeElement) {
      void this.router.navigate(['/requirements', item.requirementId]);
    } else if (event.key === 'r' && item?.reason === 'waiting_reply') {
      this.replying.set(item.id);
    } else {
      return;
    }
    event.preventDefault();
  }
}
