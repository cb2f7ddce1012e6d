import { ChangeDetectionStrategy, Component, computed, inject } from '@angular/core';
import { RouterLink } from '@angular/router';

import { I18n, keyOf } from '../core/i18n';
import { SESSION_COLUMNS } from '../core/api-types';
import { inWindow } from '../core/stores/created-window';
import { RequirementsStore } from '../core/stores/requirements-store';
import { BoardColumn } from './board-column';
import { BoardFilter, BoardFilterState } from './board-filter';

@Component({
  selector: 'am-sessions-board',
  imports: [BoardFilter, BoardColumn, RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <h1 class="sr-only">{{ t('nav.sessions') }}</h1>
    <am-board-filter />
    <div class="board" data-testid="sessions-board">
      @for (col of columns(); track col.state) {
        <am-board-column [key]="col.state" [label]="t(keyOf('ses', col.state))" [count]="col.items.length">
          <ul>
            @for (row of col.items.slice(0, 200); track row.session.id) {
              <li>
                <a
                  class="card"
                  [routerLink]="['/requirements', row.requirement.id]"
                  [attr.data-session-id]="row.session.id"
                >
                  <div class="title">{{ row.requirement.title }}</div>
                  <div class="meta">
                    <span>{{ row.session.provider }}</span>
                    @if (row.session.pausedAt) {
                      <span class="badge warn" data-testid="paused" [title]="t('paused.hint')">{{
                        t('card.paused')
                      }}</span>
                    }
                    @if (row.session.pendingMessageCount > 0) {
                      <span class="badge warn">{{ t('card.pending', { n: row.session.pendingMessageCount }) }}</span>
                    }
                    <span class="spacer"></span>
                    <time [attr.datetime]="row.session.updatedAt">{{ i18n.dateTime(row.session.updatedAt) }}</time>
                  </div>
                  @if (row.session.lastError) {
                    <div class="meta" style="color: var(--am-danger)">{{ row.session.lastError.slice(0, 160) }}</div>
                  }
                </a>
              </li>
            }
          </ul>
        </am-board-column>
      }
    </div>
  `,
})
export class SessionsBoard {
  private readonly store = inject(RequirementsStore);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  private readonly filter = inject(BoardFilterState);

  protected readonly columns = computed(() => {
    const window = this.store.window();
    const rows = this.store
      .sessions()
      .filter(
        ({ requirement: r, session: s }) =>
          r.status !== 'cancelled' &&
          inWindow(s.createdAt, window) &&
          this.filter.matches([r.title, s.id, s.provider, s.lastError]),
      )
      .sort((a, b) => (a.session.updatedAt < b.session.updatedAt ? 1 : -1));
    return SESSION_COLUMNS.map((state) => ({ items: rows.filter((r) => r.session.state === state), state }));
  });
}
