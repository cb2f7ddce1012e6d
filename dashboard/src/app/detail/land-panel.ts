import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  afterNextRender,
  computed,
  inject,
  input,
  output,
  signal,
} from '@angular/core';

import { ApiError } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { isRefusalCode, landBlock, queueBlock } from '../core/landing';
import { LAND_METHODS, type LandMethod, type Requirement } from '../core/api-types';
import { Notifier } from '../core/notifier';
import { LandingStore } from '../core/stores/landing-store';

/** A refused land or queueing, as the menu shows it: in the reader's words, then the server's, then the files. */
interface Refusal {
  code: string | null;
  headline: string | null;
  message: string;
  files: readonly string[];
}

type Loose = (key: string, params?: Record<string, string | number>) => string;

/**
 * The land menu of a Requirement (issue 28 §4): where its work stands against its base and the
 * other Requirements (the conflict radar), how to land it — each way saying in one line what it
 * will do — and its merge queue place. A refusal is shown here with its files, and leaves every
 * choice as it was for another try; what is known to refuse up front (a run at work, no branch,
 * in place) disables the land with the reason.
 */
@Component({
  selector: 'am-land-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { '(keydown.escape)': 'closed.emit()' },
  styles: `
    :host {
      display: block;
    }
    .land-panel {
      display: flex;
      flex-direction: column;
      gap: 0.5rem;
      max-width: 48rem;
    }
    .land-radar p {
      margin: 0;
    }
    .land-radar .clean {
      color: var(--am-ok);
    }
    .land-radar .conflict {
      color: var(--am-warn);
    }
    .files {
      margin: 0.15rem 0 0.3rem;
      padding-left: 1.2rem;
      overflow-wrap: anywhere;
    }
    fieldset {
      border: 0;
      margin: 0;
      padding: 0;
      display: flex;
      flex-direction: column;
      gap: 0.3rem;
      min-width: 0;
    }
    legend {
      padding: 0;
      margin-bottom: 0.2rem;
      font-weight: 600;
    }
    .method {
      flex-direction: row;
      align-items: flex-start;
      gap: 0.5rem;
      padding: 0.35rem 0.5rem;
      border: 1px solid var(--am-border);
      border-radius: 6px;
      cursor: pointer;
    }
    .method.selected {
      border-color: var(--am-accent);
    }
    .method input {
      margin-top: 0.2rem;
    }
    .method span {
      display: flex;
      flex-direction: column;
      min-width: 0;
      overflow-wrap: anywhere;
    }
    .blocked,
    .note {
      margin: 0;
      font-size: 0.9em;
    }
    .blocked {
      color: var(--am-warn);
    }
    .refusal {
      border: 1px solid var(--am-danger);
      border-left-width: 4px;
      border-radius: 6px;
      padding: 0.4rem 0.6rem;
      display: flex;
      flex-direction: column;
      gap: 0.15rem;
      overflow-wrap: anywhere;
    }
    .refusal strong {
      color: var(--am-danger);
    }
    .actions button {
      white-space: normal;
      text-align: left;
    }
    @media (max-width: 640px) {
      .land-panel {
        max-height: 55vh;
        overflow-y: auto;
      }
    }
  `,
  template: `
    <section
      class="panel land-panel"
      aria-labelledby="land-title"
      data-testid="land-panel"
      [attr.data-requirement-id]="requirement().id"
    >
      <div class="section-head">
        <h2 id="land-title">{{ t('land.title') }}</h2>
        <button
          type="button"
          class="ghost small"
          (click)="closed.emit()"
          [attr.aria-label]="t('action.close')"
          data-testid="land-close"
        >
          ✕
        </button>
      </div>

      <div class="land-radar" data-testid="land-radar" [attr.data-state]="radarState()">
        @switch (radarState()) {
          @case ('clean') {
            <p class="clean">✓ {{ t('land.radar.clean', { base: base() }) }}</p>
          }
          @case ('conflicts') {
            <p class="conflict">{{ t('land.radar.base', { base: base(), n: landing().conflictPaths.length }) }}</p>
            <ul class="files" data-testid="land-radar-files">
              @for (path of landing().conflictPaths; track path) {
                <li>
                  <code>{{ path }}</code>
                </li>
              }
            </ul>
          }
          @case ('unchecked') {
            <p class="muted">{{ t('land.radar.unchecked', { base: base() }) }}</p>
          }
        }
        @if (landing().mergesCleanly !== null && (landing().behindBy ?? 0) > 0) {
          <p class="muted" data-testid="land-radar-behind">
            {{ t('land.radar.behind', { base: base(), n: landing().behindBy ?? 0 }) }}
          </p>
        }
        @for (other of landing().conflictsWith; track other.requirementId) {
          <p class="conflict" data-testid="land-radar-with" [attr.data-requirement-id]="other.requirementId">
            {{ t('land.radar.with', { title: other.title }) }}
          </p>
          <ul class="files">
            @for (path of other.paths; track path) {
              <li>
                <code>{{ path }}</code>
              </li>
            }
          </ul>
        }
      </div>

      <fieldset [disabled]="busy()">
        <legend>{{ t('land.methods') }}</legend>
        @for (m of methods; track m) {
          <label class="method" [class.selected]="method() === m">
            <input
              type="radio"
              name="land-method"
              [value]="m"
              [checked]="method() === m"
              (change)="method.set(m)"
              [attr.data-testid]="'land-method-' + m"
            />
            <span>
              <strong>{{ t(keyOf('land.method', m)) }}</strong>
              <span class="muted" [attr.data-testid]="'land-what-' + m">{{ what(m) }}</span>
            </span>
          </label>
        }
      </fieldset>

      @if (method() !== 'pull_request') {
        @if (offerCommit()) {
          <label class="inline">
            <input
              type="checkbox"
              [checked]="commitPending()"
              (change)="commitPending.set($any($event.target).checked)"
              data-testid="land-commit-pending"
            />
            {{ t('land.commitPending') }}
          </label>
          <p class="muted note">{{ t('land.commitPendingHint') }}</p>
        }
        @if (requirement().status !== 'done') {
          <label class="inline">
            <input
              type="checkbox"
              [checked]="markDone()"
              (change)="markDone.set($any($event.target).checked)"
              data-testid="land-mark-done"
            />
            {{ t('land.markDone') }}
          </label>
        }
      }

      @if (block(); as b) {
        <p class="blocked" id="land-blocked" data-testid="land-blocked" [attr.data-block]="b">
          {{ t(keyOf('land.blocked', b)) }}
        </p>
      }
      @if (refusal(); as r) {
        <div class="refusal" role="alert" data-testid="land-refusal" [attr.data-code]="r.code">
          <strong>{{ r.headline ?? t('land.refused') }}</strong>
          <span class="muted" data-testid="land-refusal-message">{{ r.message }}</span>
          @if (r.files.length > 0) {
            <ul class="files" data-testid="land-refusal-files">
              @for (path of r.files; track path) {
                <li>
                  <code>{{ path }}</code>
                </li>
              }
            </ul>
          }
        </div>
      }

      <div class="row actions">
        <button
          type="button"
          class="primary"
          (click)="land()"
          [disabled]="busy() || block() !== null"
          [attr.aria-describedby]="block() ? 'land-blocked' : null"
          data-testid="land-submit"
        >
          {{ busy() ? t('land.landing') : doText() }}
        </button>
        @if (queued(); as q) {
          <span class="badge" data-testid="land-queued" [attr.data-state]="q.item.state">{{
            t('land.queued', { n: q.position, state: t(keyOf('queue.state', q.item.state)), total: q.total })
          }}</span>
          <button type="button" (click)="dequeue()" [disabled]="busy()" data-testid="land-dequeue">
            {{ t('land.dequeue') }}
          </button>
        } @else {
          <button
            type="button"
            (click)="enqueue()"
            [disabled]="busy() || queueBlocked() !== null"
            [attr.aria-describedby]="queueBlocked() === 'pullRequest' ? 'land-queue-blocked' : null"
            data-testid="land-enqueue"
          >
            {{ t('land.enqueue') }}
          </button>
        }
      </div>
      @if (!queued() && queueBlocked() === 'pullRequest') {
        <p class="muted note" id="land-queue-blocked" data-testid="land-queue-blocked">
          {{ t('land.blocked.pullRequest') }}
        </p>
      }
    </section>
  `,
})
export class LandPanel {
  readonly requirement = input.required<Requirement>();
  /** Escape, ✕, or a land that went through. */
  readonly closed = output<void>();
  private readonly store = inject(LandingStore);
  private readonly notifier = inject(Notifier);
  private readonly host = inject<ElementRef<HTMLElement>>(ElementRef);
  protected readonly t = inject(I18n).t;
  private readonly loose = this.t as unknown as Loose;
  protected readonly keyOf = keyOf;
  protected readonly methods = LAND_METHODS;

  /** The person's choices: kept across a refusal, for the next try. */
  protected readonly method = signal<LandMethod>('squash');
  protected readonly commitPending = signal(false);
  protected readonly markDone = signal(true);
  protected readonly busy = signal(false);
  protected readonly refusal = signal<Refusal | null>(null);
  /**
   * The work this menu was opened on (issue 44): a land or a queueing takes exactly that, and is
   * refused (head_moved) when the agent's work changed since — the person looks again first.
   */
  private shown: string | undefined;

  protected readonly landing = computed(() => this.requirement().landing);
  protected readonly base = computed(
    () => this.requirement().baseRef ?? this.requirement().worktree?.baseRef ?? 'HEAD',
  );
  protected readonly block = computed(() => landBlock(this.requirement()));
  protected readonly queueBlocked = computed(
    () => queueBlock(this.requirement()) ?? (this.method() === 'pull_request' ? ('pullRequest' as const) : null),
  );
  /** "Commit uncommitted work first" where the worktree is known dirty, or a land was refused for it. */
  protected readonly offerCommit = computed(
    () => !!this.requirement().worktree?.dirty || this.refusal()?.code === 'worktree_dirty',
  );
  protected readonly radarState = computed(() => {
    const clean = this.landing().mergesCleanly;
    return clean === true ? 'clean' : clean === false ? 'conflicts' : 'unchecked';
  });
  protected readonly queued = computed(() => {
    const queue = this.store.queue();
    const index = queue.findIndex((item) => item.requirementId === this.requirement().id);
    const item = queue[index];
    return item ? { item, position: index + 1, total: queue.length } : null;
  });
  protected readonly doText = computed(() => this.loose(`land.do.${this.method()}`, { base: this.base() }));

  constructor() {
    afterNextRender(() => {
      const worktree = this.requirement().worktree;
      this.shown = worktree?.workSha ?? worktree?.headSha ?? undefined;
    });
    // Opened from the actions: focus goes to the chosen way, where the choice is made.
    afterNextRender(() =>
      this.host.nativeElement.querySelector<HTMLInputElement>('input[name="land-method"]:checked')?.focus(),
    );
  }

  protected what(method: LandMethod): string {
    return this.loose(`land.what.${method}`, { base: this.base(), branch: this.requirement().worktree?.branch ?? '' });
  }

  protected async land(): Promise<void> {
    const method = this.method();
    const local = method !== 'pull_request';
    await this.attempt(async () => {
      const result = await this.store.land(
        this.requirement().id,
        local
          ? {
              commitPending: this.offerCommit() && this.commitPending(),
              expectedHead: this.shown,
              markDone: this.markDone(),
              method,
            }
          : { expectedHead: this.shown, method },
      );
      if (result.pullRequest) {
        this.notifier.info(
          this.t('land.prOpened', { pr: `${result.pullRequest.repository}#${result.pullRequest.number}` }),
        );
      }
      this.closed.emit();
    });
  }

  protected async enqueue(): Promise<void> {
    const method = this.method();
    if (method === 'pull_request') {
      return;
    }
    await this.attempt(() => this.store.enqueue(this.requirement().id, method, this.shown));
  }

  protected async dequeue(): Promise<void> {
    await this.attempt(() => this.store.dequeue(this.requirement().id));
  }

  private async attempt(action: () => Promise<void>): Promise<void> {
    this.busy.set(true);
    this.refusal.set(null);
    try {
      await action();
    } catch (err) {
      this.refusal.set(this.refusalOf(err));
    } finally {
      this.busy.set(false);
    }
  }

  private refusalOf(err: unknown): Refusal {
    if (!(err instanceof ApiError)) {
      return { code: null, files: [], headline: null, message: err instanceof Error ? err.message : String(err) };
    }
    const headline = isRefusalCode(err.code) ? this.loose(`land.refused.${err.code}`, { base: this.base() }) : null;
    return {
      code: err.code,
      files: err.details,
      headline,
      message: err.status ? `${err.status} · ${err.message}` : err.message,
    };
  }
}
