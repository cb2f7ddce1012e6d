import { ChangeDetectionStrategy, Component, inject, input } from '@angular/core';

import { I18n } from '../core/i18n';

/**
 * One board column. Long columns render a first slice and grow on request, so a board with a
 * thousand cards still paints at once.
 */
@Component({
  selector: 'am-board-column',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <section class="column" [attr.aria-labelledby]="'col-' + key()" [attr.data-column]="key()">
      <header>
        <h2 [id]="'col-' + key()">{{ label() }}</h2>
        <span class="badge" data-testid="column-count">{{ count() }}</span>
      </header>
      <ng-content />
      @if (count() === 0) {
        <p class="empty">{{ t('board.empty') }}</p>
      }
    </section>
  `,
})
export class BoardColumn {
  readonly key = input.required<string>();
  readonly label = input.required<string>();
  readonly count = input.required<number>();
  protected readonly t = inject(I18n).t;
}
