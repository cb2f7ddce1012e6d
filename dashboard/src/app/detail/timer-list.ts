import { ChangeDetectionStrategy, Component, computed, inject, input, signal } from '@angular/core';

import { I18n, keyOf } from '../core/i18n';
import type { Timer } from '../core/api-types';
import { TimersStore } from '../core/stores/timers-store';

/** A Requirement's timers with create and cancel. */
@Component({
  selector: 'am-timer-list',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <ul class="list">
      @for (timer of timers(); track timer.id) {
        <li class="row" [attr.data-timer-id]="timer.id">
          <span class="spacer">{{ timer.description }}</span>
          <span class="badge">{{ t(keyOf('timer', timer.schedule)) }}</span>
          @if (timer.schedule === 'recurring') {
            <span class="muted">{{ t('timer.every', { n: interval(timer.intervalSeconds) }) }}</span>
          }
          @if (timer.status === 'active') {
            <span class="muted">{{ t('timer.next', { t: i18n.dateTime(timer.nextFireAt) }) }}</span>
            <button type="button" class="small danger" (click)="onCancel(timer)" data-testid="cancel-timer">
              {{ t('action.cancelTimer') }}
            </button>
          } @else {
            <span class="badge">{{ t(keyOf('timer', timer.status)) }}</span>
          }
        </li>
      } @empty {
        <li class="empty" style="border: 0">{{ t('detail.noTimers') }}</li>
      }
    </ul>
    @if (canCreate()) {
      <form
        class="row"
        style="margin-top: 0.5rem; align-items: end"
        (submit)="onCreate($event)"
        [attr.aria-label]="t('action.addTimer')"
      >
        <label style="flex: 1 1 12rem">
          {{ t('timer.description') }}
          <input
            required
            maxlength="500"
            [value]="description()"
            (input)="description.set($any($event.target).value)"
            data-testid="timer-description"
          />
        </label>
        <label>
          {{ t('timer.minutes') }}
          <input
            type="number"
            min="1"
            max="525600"
            style="width: 6rem"
            [value]="minutes()"
            (input)="minutes.set(+$any($event.target).value)"
            data-testid="timer-minutes"
          />
        </label>
        <label class="inline"
          ><input type="checkbox" (change)="recurring.set($any($event.target).checked)" />
          {{ t('timer.recurring') }}</label
        >
        <button type="submit" class="small" [disabled]="!description().trim() || minutes() < 1" data-testid="add-timer">
          {{ t('action.addTimer') }}
        </button>
      </form>
    }
  `,
})
export class TimerList {
  readonly requirementId = input.required<string>();
  readonly canCreate = input(true);
  private readonly store = inject(TimersStore);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly description = signal('');
  protected readonly minutes = signal(60);
  protected readonly recurring = signal(false);

  protected readonly timers = computed(() =>
    [...this.store.timers().values()]
      .filter((timer) => timer.requirementId === this.requirementId())
      .sort(
        (a, b) =>
          (a.status === 'active' ? 0 : 1) - (b.status === 'active' ? 0 : 1) || (a.createdAt < b.createdAt ? 1 : -1),
      ),
  );

  protected interval(seconds: number): string {
    return this.i18n.interval(seconds);
  }

  protected async onCreate(event: Event): Promise<void> {
    event.preventDefault();
    try {
      await this.store.create(this.requirementId(), {
        description: this.description().trim(),
        intervalSeconds: Math.round(this.minutes() * 60),
        schedule: this.recurring() ? 'recurring' : 'once',
      });
      this.description.set('');
    } catch {
      // shown by the API service
    }
  }

  protected async onCancel(timer: Timer): Promise<void> {
    try {
      await this.store.cancel(timer);
    } catch {
      // shown by the API service
    }
  }
}
