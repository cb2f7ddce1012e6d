import { ChangeDetectionStrategy, Component, computed, inject, signal } from '@angular/core';
import { RouterLink } from '@angular/router';

import { firstLine } from '../core/attention';
import { I18n, keyOf } from '../core/i18n';
import { radarChips, type RadarChip } from '../core/landing';
import { REQUIREMENT_COLUMNS, type Requirement, type RequirementStatus } from '../core/api-types';
import { inWindow } from '../core/stores/created-window';
import { LandingStore } from '../core/stores/landing-store';
import { RequirementsStore } from '../core/stores/requirements-store';
import { WorkspaceGit } from '../core/stores/workspace-git';
import { blockedBy } from './blocked-by';
import { BoardColumn } from './board-column';
import { BudgetMeter } from './budget-meter';
import { BoardFilter, BoardFilterState } from './board-filter';
import { LandingQueuePanel } from './landing-queue';
import { treeOrder } from './tree';
import { SetupPanel } from '../setup/setup-panel';

const STEP = 60;

@Component({
  selector: 'am-requirements-board',
  imports: [BoardFilter, BoardColumn, BudgetMeter, LandingQueuePanel, RouterLink, SetupPanel],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <h1 class="sr-only">{{ t('nav.requirements') }}</h1>
    <!-- doctor's findings wait for the board's own reads anyway (see SetupPanel): its code does too. -->
    @defer (on idle) {
      <am-setup-panel />
    }
    <am-board-filter>
      <!-- Cancelled Requirements are off the board by default (they need nothing), but never out of reach. -->
      <label class="inline">
        <input
          type="checkbox"
          [checked]="showCancelled()"
          (change)="showCancelled.set($any($event.target).checked)"
          data-testid="show-cancelled"
        />
        {{ t('board.showCancelled') }}
      </label>
    </am-board-filter>
    <!-- On a phone one column shows at a time: the switcher picks it (with the counts). -->
    <div class="column-switcher" role="tablist" [attr.aria-label]="t('board.columns')" data-testid="column-switcher">
      @for (col of columns(); track col.status) {
        <button
          type="button"
          role="tab"
          [attr.aria-selected]="shownColumn() === col.status"
          [class.primary]="shownColumn() === col.status"
          (click)="column.set(col.status)"
          [attr.data-column]="col.status"
        >
          {{ t(keyOf('req', col.status)) }} <span class="badge">{{ col.rows.length }}</span>
        </button>
      }
    </div>
    <!-- The merge queue's code loads with its first item: most boards never have one. -->
    @defer (when landing.queue().length > 0) {
      <am-landing-queue />
    }
    <div class="board" data-testid="requirements-board" [attr.data-shown-column]="shownColumn()">
      @for (col of columns(); track col.status) {
        <am-board-column
          [key]="col.status"
          [label]="t(keyOf('req', col.status))"
          [count]="col.rows.length"
          [class.shown]="shownColumn() === col.status"
        >
          <ul>
            @for (row of col.rows.slice(0, shown(col.status)); track row.item.id) {
              <li>
                <a
                  class="card"
                  [class.child]="row.depth > 0"
                  [style.--depth]="row.depth"
                  [routerLink]="['/requirements', row.item.id]"
                  [attr.data-requirement-id]="row.item.id"
                >
                  <div class="title">{{ row.item.title }}</div>
                  @if (row.depth === 0 && row.item.parentRequirementId) {
                    <div class="meta" data-testid="parent">
                      ↳
                      {{
                        store.requirements().get(row.item.parentRequirementId)?.title ?? row.item.parentRequirementId
                      }}
                    </div>
                  }
                  @if (row.item.session.state === 'failed' && row.item.session.lastError) {
                    <div class="meta failure" data-testid="card-error">{{ short(row.item.session.lastError) }}</div>
                  }
                  <div class="meta">
                    <!-- A cancelled one's session ended with it ("Completed" beside "Cancelled" contradicts). -->
                    @if (row.item.status !== 'cancelled') {
                      <span
                        class="badge"
                        [class.accent]="row.item.session.state === 'running'"
                        [class.danger]="row.item.session.state === 'failed'"
                        [attr.data-state]="row.item.session.state"
                        data-testid="session-badge"
                        >{{
                          row.item.session.state === 'failed'
                            ? t('failed.card')
                            : t(keyOf('ses', row.item.session.state))
                        }}</span
                      >
                    }
                    @if (row.item.session.pausedAt && !row.item.budgetReachedAt) {
                      <span class="badge warn" data-testid="paused" [title]="t('paused.hint')">{{
                        t('card.paused')
                      }}</span>
                    }
                    @if (row.item.budgetReachedAt) {
                      <span class="badge danger" data-testid="budget-reached" [title]="t('budget.hint')">{{
                        t('card.budgetReached')
                      }}</span>
                    }
                    <am-budget-meter [requirement]="row.item" />
                    @if (row.item.session.pendingMessageCount > 0) {
                      <span class="badge warn" data-testid="pending-count">{{
                        t('card.pending', { n: row.item.session.pendingMessageCount })
                      }}</span>
                    }
                    @if (row.item.isolation === 'in_place' && workspaceGit.state() === 'no_commit') {
                      <span class="badge warn" data-testid="card-in-place" [title]="t('card.inPlaceHint')">{{
                        t('card.inPlace')
                      }}</span>
                    }
                    @if (blockers(row.item); as names) {
                      <span class="badge warn" data-testid="blocked-by">{{ t('card.blockedBy', { s: names }) }}</span>
                    }
                    @if (row.item.source; as s) {
                      <!-- The issue it came from; closed on the tracker while the work goes on says so. -->
                      <span
                        class="badge"
                        [class.warn]="s.state === 'closed' && row.item.status !== 'done'"
                        data-testid="card-issue"
                        [attr.data-state]="s.state"
                        [title]="s.repository + '#' + s.number + ': ' + s.title"
                        >{{ s.state === 'closed' ? t('card.issueClosed', { n: s.number }) : '#' + s.number }}</span
                      >
                    }
                    @if (childCount().get(row.item.id); as n) {
                      <span class="badge">{{ t('card.children', { n }) }}</span>
                    }
                    <span>{{ row.item.provider }}</span>
                    @if (store.runnerOf(row.item); as runner) {
                      <span
                        class="badge"
                        [class.warn]="!runner.online"
                        data-testid="card-runner"
                        [title]="
                          t(runner.online ? 'card.runnerHint' : 'card.runnerOfflineHint', {
                            person: runner.person,
                            host: runner.host,
                          })
                        "
                        >{{
                          runner.online
                            ? t('card.runner', { person: runner.person })
                            : t('card.runnerOffline', { person: runner.person })
                        }}</span
                      >
                    }
                    @if (row.item.worktree?.branch; as branch) {
                      <code class="branch" data-testid="card-branch" [title]="branch">{{ branch }}</code>
                      @if (row.item.worktree?.ahead) {
                        <span class="badge" data-testid="card-ahead">{{
                          t('card.ahead', { n: row.item.worktree?.ahead ?? 0 })
                        }}</span>
                      }
                      @if (row.item.worktree?.dirty) {
                        <span class="badge warn" data-testid="card-dirty">{{ t('card.dirty') }}</span>
                      }
                    }
                    @for (chip of radar(row.item); track chip.kind) {
                      <span
                        class="badge radar"
                        [class]="'badge radar ' + chip.kind"
                        [attr.data-testid]="'card-radar-' + chip.kind"
                        [title]="chip.title"
                        >{{ chip.text }}</span
                      >
                    }
                    <span class="spacer"></span>
                    <time [attr.datetime]="row.item.createdAt">{{ i18n.dateTime(row.item.createdAt) }}</time>
                  </div>
                </a>
              </li>
            }
          </ul>
          @if (col.rows.length > shown(col.status)) {
            <button type="button" class="ghost small" (click)="more(col.status)">
              {{ t('board.more', { n: col.rows.length - shown(col.status) }) }}
            </button>
          }
        </am-board-column>
      }
    </div>
  `,
})
export class RequirementsBoard {
  protected readonly store = inject(RequirementsStore);
  /** Without a commit, in-place cards say that they work in the person's checkout. */
  protected readonly workspaceGit = inject(WorkspaceGit);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  private readonly filter = inject(BoardFilterState);
  protected readonly landing = inject(LandingStore);
  protected readonly limit = signal<Record<string, number>>({});
  protected readonly short = (text: string | null) => firstLine(text, 100);
  /** The phone's column (ignored where every column shows): the first with cards, until one is picked. */
  protected readonly column = signal<string | null>(null);
  protected readonly showCancelled = signal(false);

  constructor() {
    void this.workspaceGit.ensure();
  }
  protected readonly shownColumn = computed(
    () => this.column() ?? this.columns().find((c) => c.rows.length > 0)?.status ?? 'todo',
  );

  private readonly visible = computed(() => {
    const window = this.store.window();
    return [...this.store.requirements().values()]
      .filter(
        (r) =>
          (r.status !== 'cancelled' || this.showCancelled()) &&
          inWindow(r.createdAt, window) &&
          this.filter.matches([r.title, r.id, r.description.slice(0, 500), r.provider, r.model]),
      )
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  });

  protected readonly childCount = computed(() => {
    const counts = new Map<string, number>();
    for (const r of this.store.requirements().values()) {
      if (r.parentRequirementId && r.status !== 'cancelled') {
        counts.set(r.parentRequirementId, (counts.get(r.parentRequirementId) ?? 0) + 1);
      }
    }
    return counts;
  });

  protected readonly columns = computed(() => {
    const statuses: readonly RequirementStatus[] = this.showCancelled()
      ? [...REQUIREMENT_COLUMNS, 'cancelled']
      : REQUIREMENT_COLUMNS;
    const byStatus = new Map<string, Requirement[]>(statuses.map((s) => [s, []]));
    for (const r of this.visible()) {
      byStatus.get(r.status)?.push(r);
    }
    return statuses.map((status) => ({ rows: treeOrder<Requirement>(byStatus.get(status) ?? []), status }));
  });

  /** The conflict radar's answer for a card (live: each pass's `requirement.updated` carries it). */
  protected radar(requirement: Requirement): RadarChip[] {
    return radarChips(requirement, this.t, (id) => this.store.requirements().get(id)?.title);
  }

  protected blockers(requirement: Requirement): string | null {
    return blockedBy(requirement, (id) => this.store.requirements().get(id)?.title);
  }

  protected shown(status: string): number {
    return this.limit()[status] ?? STEP;
  }

  protected more(status: string): void {
    this.limit.update((l) => ({ ...l, [status]: (l[status] ?? STEP) + STEP * 4 }));
  }
}
