import { ChangeDetectionStrategy, Component, Injectable, inject, signal } from '@angular/core';

import { I18n, keyOf } from '../core/i18n';
import { CREATED_WINDOWS, type CreatedWindow } from '../core/stores/created-window';
import type { Usage } from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';
import { UsageStore } from '../core/stores/usage-store';

/** The text filter is shared by every board, so switching boards keeps what was typed. */
@Injectable({ providedIn: 'root' })
export class BoardFilterState {
  readonly text = signal('');

  /** Case-insensitive match of every word against any of the given fields. */
  matches(fields: readonly (string | null | undefined)[]): boolean {
    const words = this.text().trim().toLowerCase().split(/\s+/).filter(Boolean);
    if (words.length === 0) {
      return true;
    }
    const haystack = fields.filter(Boolean).join(' ').toLowerCase();
    return words.every((w) => haystack.includes(w));
  }
}

@Component({
  selector: 'am-board-filter',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="filters" role="search">
      <label>
        {{ t('filter.text') }}
        <input type="search" [value]="filter.text()" (input)="onText($event)" data-testid="filter-text" />
      </label>
      <label>
        {{ t('filter.created') }}
        <select [value]="requirements.window()" (change)="onWindow($event)" data-testid="filter-created">
          @for (w of windows; track w) {
            <option [value]="w" [selected]="w === requirements.window()">{{ t(keyOf('filter', w)) }}</option>
          }
        </select>
      </label>
      <!-- A board's own switches (the Requirements board's "Show cancelled"). -->
      <ng-content />
      @if (requirements.loading()) {
        <span class="muted" role="status">{{ t('board.loading') }}</span>
      }
      <span class="spacer"></span>
      @if (usage.workspace(); as u) {
        <!-- The workspace's usage sits with the boards: the header has no room for it at 1280 px. -->
        <span class="usage muted" data-testid="usage-workspace">{{
          t('usage.summary', { t: usageText(u.today), w: usageText(u.week) })
        }}</span>
      }
    </div>
  `,
})
export class BoardFilter {
  protected readonly requirements = inject(RequirementsStore);
  protected readonly filter = inject(BoardFilterState);
  protected readonly usage = inject(UsageStore);
  private readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly windows = Object.keys(CREATED_WINDOWS) as CreatedWindow[];

  protected usageText(u: Usage): string {
    const tokens = (u.inputTokens + u.outputTokens).toLocaleString(this.i18n.locale(), {
      maximumFractionDigits: 1,
      notation: 'compact',
    });
    const text = this.t('usage.tokensShort', { n: tokens });
    return u.costUsd === null ? text : `${text} · $${u.costUsd.toFixed(2)}`;
  }

  protected onText(event: Event): void {
    this.filter.text.set((event.target as HTMLInputElement).value);
  }

  protected onWindow(event: Event): void {
    void this.requirements.setWindow((event.target as HTMLSelectElement).value as CreatedWindow);
  }
}
