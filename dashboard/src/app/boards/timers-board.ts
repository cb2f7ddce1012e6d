import { ChangeDetectionStrategy, Component, computed, inject } from '@angular/core';
import { RouterLink } from '@angular/router';

import { I18n, keyOf } from '../core/i18n';
import type { Timer } from '../core/api-types';
import { inWindow } from '../core/stores/created-window';
import { RequirementsStore } from '../core/stores/requirements-store';
import { TimersStore } from '../core/stores/timers-store';
import { BoardColumn } from './board-column';
import { BoardFilter, BoardFilterState } from './board-filter';

const TIMER_COLUMNS = ['active', 'completed', 'cancelled'] as const satisfies readonly Timer['status'][];

@Component({
  selector: 'am-timers-board',
  imports: [BoardFilter, BoardColumn, RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <h1 class="sr-only">{{ t('nav.timers') }}</h1>
    <am-board-filter />
    <div class="board" data-testid="timers-board">
      @for (col of columns(); track col.status) {
        <am-board-column [key]="col.status" [label]="t(keyOf('timerCol', col.status))" [count]="col.items.length">
          <ul>
            @for (timer of col.items; track timer.id) {
              <li class="card" [attr.data-timer-id]="timer.id">
                <div class="title">{{ timer.description }}</div>
                <div class="meta">
                  <span class="badge">{{ t(keyOf('timer', timer.schedule)) }}</span>
                  @if (timer.schedule === 'recurring') {
                    <span>{{ t('timer.every', { n: interval(timer.intervalSeconds) }) }}</span>
                  }
                  @if (timer.nextFireAt) {
                    <span>{{ t('timer.next', { t: i18n.dateTime(timer.nextFireAt) }) }}</span>
                  }
                </div>
                <div class="meta">
                  <a [routerLink]="['/requirements', timer.requirementId]">{{
                    requirements.requirements().get(timer.requirementId)?.title ?? timer.requirementId
                  }}</a>
                </div>
              </li>
            }
          </ul>
        </am-board-column>
      }
    </div>
  `,
})
export class TimersBoard {
  protected readonly requirements = inject(RequirementsStore);
  private readonly store = inject(TimersStore);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  private readonly filter = inject(BoardFilterState);

  protected interval(seconds: number): string {
    return this.i18n.interval(seconds);
  }

  protected readonly columns = computed(() => {
    const window = this.requirements.window();
    const items = [...this.store.timers().values()]
      .filter(
        (timer) =>
          inWindow(timer.createdAt, window) &&
          this.filter.matches([
            timer.description,
            timer.id,
            this.requirements.requirements().get(timer.requirementId)?.title,
          ]),
      )
      .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1));
    return TIMER_COLUMNS.map((status) => ({ items: items.filter((timer) => timer.status === status), status }));
  });
}
