import { ChangeDetectionStrategy, Component, Injectable, inject, signal } from '@angular/core';

import { I18n, keyOf } from '../core/i18n';
import { CREATED_WINDOWS, type CreatedWindow } from '../core/stores/created-window';
import { RequirementsStore } from '../core/stores/requirements-store';

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
      @if (requirements.loading()) {
        <span class="muted" role="status">{{ t('board.loading') }}</span>
      }
    </div>
  `,
})
export class BoardFilter {
  protected readonly requirements = inject(RequirementsStore);
  protected readonly filter = inject(BoardFilterState);
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  protected readonly windows = Object.keys(CREATED_WINDOWS) as CreatedWindow[];

  protected onText(event: Event): void {
    this.filter.text.set((event.target as HTMLInputElement).value);
  }

  protected onWindow(event: Event): void {
    void this.requirements.setWindow((event.target as HTMLSelectElement).value as CreatedWindow);
  }
}
