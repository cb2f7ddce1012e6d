import {
  ChangeDetectionStrategy,
  Component,
  OnInit,
  computed,
  inject,
  input,
  output,
  signal,
  viewChild,
} from '@angular/core';
import { Router } from '@angular/router';

import { LIMITS } from '@libs/contracts';

import { ApiError } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { Notifier } from '../core/notifier';
import {
  PROVIDERS,
  type EditedRequirement,
  type Provider,
  type ReasoningEffort,
  type Requirement,
  type UpdateRequirement,
} from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';
import { WorkspaceGit } from '../core/stores/workspace-git';
import { DependsOnPicker, type ChosenDependency } from './depends-on-picker';
import { Modal } from './modal';
import { ModelPicker } from './model-picker';

/** create: a new Requirement; edit: PATCH this one (text and provider only while todo); fork: a new todo copy of it. */
export type RequirementDialogMode = 'create' | 'edit' | 'fork';

/** A Requirement this dialog created, when what followed needs saying before it closes. */
interface Created {
  id: string;
  title: string;
  /** "Start right away" was refused (a dependency unmet, a budget…): the server's reason. */
  startError: string | null;
  /** It runs in place because the repository has no commit (the create answer's warning). */
  noCommit: boolean;
}

@Component({
  selector: 'am-create-requirement-dialog',
  imports: [DependsOnPicker, Modal, ModelPicker],
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    .create-warning {
      margin: 0;
      padding: 0.4rem 0.6rem;
      border: 1px solid var(--am-warn);
      border-radius: 6px;
      color: var(--am-warn);
      overflow-wrap: anywhere;
    }
    .base-ref-fixed {
      margin: 0;
    }
    .create-result {
      display: flex;
      flex-direction: column;
      gap: 0.65rem;
    }
    .create-result h2 {
      overflow-wrap: anywhere;
    }
  `,
  template: `
    <dialog
      amModal
      (amClosed)="closed.emit()"
      (cancel)="onEscape($event)"
      aria-labelledby="create-title"
      data-testid="create-dialog"
      [attr.data-mode]="mode()"
    >
      @if (created(); as c) {
        <!-- Created: the form is gone, so nothing can create it a second time. -->
        <div class="create-result" data-testid="create-result" [attr.data-requirement-id]="c.id">
          <h2 id="create-title">{{ t('create.created', { s: c.title }) }}</h2>
          @if (c.startError) {
            <p class="field-error" role="alert" data-testid="create-start-error">
              {{ t('create.startFailed', { e: c.startError }) }}
            </p>
          }
          @if (c.noCommit) {
            <p class="create-warning" role="status" data-testid="create-no-commit">{{ t('create.noCommitWarning') }}</p>
            @if (workspaceGit.state() === 'repository') {
              <p class="muted" role="status" data-testid="first-commit-done">{{ t('workspace.firstCommitDone') }}</p>
            } @else {
              <p class="row">
                <button
                  type="button"
                  (click)="onFirstCommit()"
                  [disabled]="busy()"
                  [title]="t('workspace.firstCommitHint')"
                  data-testid="first-commit"
                >
                  {{ t('workspace.firstCommit') }}
                </button>
              </p>
            }
          }
          <div class="row">
            <span class="spacer"></span>
            <button type="button" class="primary" (click)="openCreated(c.id)" data-testid="open-created">
              {{ t('create.open') }}
            </button>
          </div>
        </div>
      } @else {
        <form (submit)="onSubmit($event)">
          <h2 id="create-title">
            {{ mode() === 'edit' ? t('edit.title') : mode() === 'fork' ? t('fork.title') : t('create.title') }}
          </h2>
          @if (mode() === 'create') {
            <!-- Work from the tracker (issue 49 §2): the issue picker, in the place a new Requirement starts. -->
            <p class="muted">
              <button type="button" class="ghost small" (click)="onFromIssue()" data-testid="create-from-issue">
                {{ t('create.fromIssue') }}
              </button>
            </p>
          }
          @if (locked()) {
            <p class="muted" data-testid="edit-started-note">{{ t('edit.startedNote') }}</p>
          }
          <label>
            <span class="row"
              >{{ t('create.name') }} <span class="spacer"></span
              ><span class="muted counter" [class.over]="tooLong()" data-testid="title-counter" aria-live="polite">{{
                t('create.counter', { max: maxTitle, n: title().length })
              }}</span></span
            >
            <input
              name="title"
              required
              autofocus
              [value]="title()"
              (input)="title.set(value($event))"
              [disabled]="locked()"
              [attr.aria-invalid]="tooLong()"
              aria-describedby="title-error"
              data-testid="create-title"
            />
            @if (tooLong()) {
              <span id="title-error" class="field-error" role="alert" data-testid="title-error">{{
                t('create.tooLong', { max: maxTitle, n: title().length })
              }}</span>
            }
          </label>
          <label>
            {{ t('create.description') }}
            <textarea
              name="description"
              rows="6"
              [value]="description()"
              (input)="description.set(value($event))"
              [disabled]="locked()"
              data-testid="create-description"
            ></textarea>
          </label>
          @if (mode() !== 'fork') {
            <am-depends-on-picker [selfId]="mode() === 'edit' ? (source()?.id ?? null) : null" [(chosen)]="dependsOn" />
          }
          @if (mode() === 'create') {
            <label>
              {{ t('create.baseRef') }}
              <input
                name="baseRef"
                maxlength="255"
                autocomplete="off"
                spellcheck="false"
                [placeholder]="t('create.baseRefHint')"
                [value]="baseRef()"
                (input)="baseRef.set(value($event))"
                data-testid="create-base-ref"
              />
            </label>
            @if (workspaceGit.state() === 'no_commit') {
              <p class="create-warning" data-testid="create-no-commit-note">{{ t('create.noCommitWarning') }}</p>
            }
          } @else if (source()?.baseRef; as ref) {
            <p class="muted base-ref-fixed" data-testid="base-ref-fixed">{{ t('create.baseRefFixed', { s: ref }) }}</p>
          }
          <div class="row">
            <label>
              {{ t('detail.provider') }}
              <select
                name="provider"
                (change)="provider.set($any(value($event)))"
                [disabled]="locked()"
                data-testid="create-provider"
              >
                @for (p of providers; track p) {
                  <option [value]="p" [selected]="p === provider()">{{ p }}</option>
                }
              </select>
            </label>
            <am-model-picker [provider]="provider()" [(modelId)]="model" [(effort)]="effort" />
          </div>
          <div class="row" data-testid="auto-review-control">
            <label class="inline"
              ><input
                type="checkbox"
                [checked]="autoReview()"
                (change)="autoReview.set($any($event.target).checked)"
                data-testid="create-auto-review"
              />
              {{ t('create.autoReview') }}</label
            >
            @if (autoReview()) {
              <label>
                {{ t('create.autoReviewer') }}
                <select
                  name="autoReviewProvider"
                  (change)="autoReviewProvider.set($any(value($event)))"
                  data-testid="create-auto-review-provider"
                >
                  <option value="" [selected]="autoReviewProvider() === ''">{{ t('create.autoReviewOther') }}</option>
                  @for (p of providers; track p) {
                    <option [value]="p" [selected]="p === autoReviewProvider()">{{ p }}</option>
                  }
                </select>
              </label>
              <label>
                {{ t('create.autoReviewRounds') }}
                <input
                  name="autoReviewRounds"
                  type="number"
                  min="1"
                  [max]="maxRounds"
                  [value]="autoReviewRounds()"
                  (input)="autoReviewRounds.set(+value($event))"
                  data-testid="create-auto-review-rounds"
                />
              </label>
            }
          </div>
          <div class="row" data-testid="create-budget">
            <label>
              {{ t('budget.maxTokens') }}
              <input
                name="budgetTokens"
                type="number"
                min="1"
                step="1"
                inputmode="numeric"
                [placeholder]="mode() === 'edit' ? t('budget.none') : t('detail.default')"
                [value]="budgetTokens()"
                (input)="budgetTokens.set(value($event))"
                data-testid="create-budget-tokens"
              />
            </label>
            <label>
              {{ t('budget.maxCostUsd') }}
              <input
                name="budgetCost"
                type="number"
                min="0.01"
                step="0.01"
                inputmode="decimal"
                [placeholder]="mode() === 'edit' ? t('budget.none') : t('detail.default')"
                [value]="budgetCost()"
                (input)="budgetCost.set(value($event))"
                data-testid="create-budget-cost"
              />
            </label>
          </div>
          @if (mode() !== 'edit') {
            <label class="inline"
              ><input type="checkbox" (change)="startNow.set($any($event.target).checked)" />
              {{ t('create.startNow') }}</label
            >
          }
          <div class="row">
            <span class="spacer"></span>
            <button type="button" (click)="modal().close()">{{ t('action.cancel') }}</button>
            <button
              type="submit"
              class="primary"
              [disabled]="busy() || !title().trim() || tooLong()"
              data-testid="create-submit"
            >
              {{ mode() === 'edit' ? t('action.save') : mode() === 'fork' ? t('action.fork') : t('action.create') }}
            </button>
          </div>
        </form>
      }
    </dialog>
  `,
})
export class CreateRequirementDialog implements OnInit {
  readonly mode = input<RequirementDialogMode>('create');
  /** The Requirement edited or forked. */
  readonly source = input<Requirement | null>(null);
  readonly closed = output<void>();
  /** The person chose to start from GitHub issues instead (the app opens the picker). */
  readonly fromIssue = output<void>();
  private readonly notifier = inject(Notifier);
  private readonly store = inject(RequirementsStore);
  private readonly router = inject(Router);
  protected readonly t = inject(I18n).t;
  protected readonly modal = viewChild.required(Modal);
  protected readonly providers = PROVIDERS;
  protected readonly maxTitle = LIMITS.titleLength;
  protected readonly title = signal('');
  protected readonly description = signal('');
  protected readonly provider = signal<Provider>('codex');
  protected readonly model = signal('');
  protected readonly effort = signal<ReasoningEffort | ''>('');
  /** The budget's limits as typed; both empty is the configured default on create, no budget on edit. */
  protected readonly budgetTokens = signal('');
  protected readonly budgetCost = signal('');
  protected readonly startNow = signal(false);
  protected readonly maxRounds = LIMITS.autoReviewMaxRounds;
  /** The cross-model review loop: on or off, its reviewer ('' for the other provider) and round limit. */
  protected readonly autoReview = signal(false);
  protected readonly autoReviewProvider = signal<Provider | ''>('');
  protected readonly autoReviewRounds = signal(3);
  protected readonly busy = signal(false);
  /** What it waits for: on create in the body, on edit through PUT …/dependencies when changed. */
  protected readonly dependsOn = signal<ChosenDependency[]>([]);
  protected readonly baseRef = signal('');
  protected readonly created = signal<Created | null>(null);
  protected readonly workspaceGit = inject(WorkspaceGit);
  /** Refused with a message rather than cut: the server's limit, counted as the person types. */
  protected readonly tooLong = computed(() => this.title().length > LIMITS.titleLength);
  /** Editing a started Requirement: its text and provider are fixed. */
  protected readonly locked = computed(() => this.mode() === 'edit' && this.source()?.status !== 'todo');
  private initial = '';

  ngOnInit(): void {
    const source = this.source();
    if (source) {
      this.title.set(source.title);
      this.description.set(source.description);
      this.provider.set(source.provider);
      this.model.set(source.model ?? '');
      this.effort.set(source.reasoningEffort ?? '');
      if (source.autoReview) {
        this.autoReview.set(true);
        this.autoReviewProvider.set(source.autoReview.provider);
        this.autoReviewRounds.set(source.autoReview.maxRounds);
      }
      this.budgetTokens.set(source.budget?.maxTokens?.toString() ?? '');
      this.budgetCost.set(source.budget?.maxCostUsd?.toString() ?? '');
      if (this.mode() === 'edit') {
        this.dependsOn.set(this.dependenciesOf(source));
        this.readTitles();
      }
    }
    if (this.mode() === 'create') {
      void this.workspaceGit.ensure();
    }
    this.initial = this.snapshot();
  }

  protected value(event: Event): string {
    return (event.target as HTMLInputElement).value;
  }

  /** Escape closes the dialog; with a draft typed it asks first instead of throwing it away. */
  protected onEscape(event: Event): void {
    if (!this.created() && this.snapshot() !== this.initial && !confirm(this.t('create.discardAsk'))) {
      event.preventDefault();
    }
  }

  protected onFromIssue(): void {
    this.fromIssue.emit();
    this.modal().close();
  }

  protected async onSubmit(event: Event): Promise<void> {
    event.preventDefault();
    if (this.tooLong()) {
      return;
    }
    this.busy.set(true);
    try {
      const fields = {
        budget: this.budget(),
        description: this.description(),
        model: this.model().trim() || null,
        provider: this.provider(),
        reasoningEffort: this.effort() || null,
        title: this.title().trim(),
      };
      const source = this.source();
      if (this.mode() === 'edit' && source) {
        const changed: UpdateRequirement = this.changed(source, fields);
        const autoReview = this.autoReviewBody();
        if (JSON.stringify(autoReview) !== JSON.stringify(source.autoReview)) {
          changed.autoReview = autoReview;
        }
        if (Object.keys(changed).length > 0) {
          this.warnAbout(await this.store.update(source.id, changed));
        }
        const dependsOn = this.dependsOnBody();
        if (JSON.stringify(dependsOn) !== JSON.stringify(this.dependsOnBody(this.dependenciesOf(source)))) {
          // autoStart is the Requirement's own choice: a new list keeps it.
          await this.store.setDependencies(source.id, { autoStart: source.autoStart ?? false, dependsOn });
        }
        this.modal().close();
        return;
      }
      const withLoop = { ...fields, autoReview: this.autoReviewBody() };
      let created: Requirement;
      let noCommit = false;
      if (this.mode() === 'fork' && source) {
        created = await this.store.fork(source.id, withLoop);
      } else {
        const dependsOn = this.dependsOnBody();
        const baseRef = this.baseRef().trim();
        // "Start right away" with dependencies is the person's intent to start once they are met:
        // autoStart, so it starts by itself then (a start now would be refused while one waits).
        const edited = await this.store.create({
          ...withLoop,
          ...(dependsOn.length > 0 && { dependsOn, ...(this.startNow() && { autoStart: true }) }),
          ...(baseRef && { baseRef }),
        });
        this.warnAbout(edited);
        noCommit = edited.warnings.includes('no_commit_in_place');
        created = edited;
      }
      // Created: from here on this dialog never creates again, whatever the start answers.
      let startError: string | null = null;
      const waitsFor = (created.dependsOn ?? []).filter((d) => d.state === 'pending');
      if (this.startNow() && waitsFor.length > 0) {
        this.notifier.info(
          this.t('create.startsWhen', {
            s: waitsFor
              .map((d) =>
                this.t(keyOf('deps.is', d.until), {
                  s: this.store.requirements().get(d.requirementId)?.title ?? d.requirementId,
                }),
              )
              .join(', '),
          }),
        );
      } else if (this.startNow()) {
        try {
          await this.store.start(created.id);
        } catch (err) {
          startError = err instanceof ApiError ? err.message : String(err);
        }
      }
      if (startError !== null || noCommit) {
        this.created.set({ id: created.id, noCommit, startError, title: created.title });
        return;
      }
      this.openCreated(created.id);
    } catch {
      // The API service already told the person what went wrong.
    } finally {
      this.busy.set(false);
    }
  }

  protected openCreated(id: string): void {
    this.modal().close();
    void this.router.navigate(['/requirements', id]);
  }

  protected async onFirstCommit(): Promise<void> {
    this.busy.set(true);
    try {
      await this.workspaceGit.makeFirstCommit();
    } catch {
      // The API service showed the refusal (files staged, no git identity…).
    } finally {
      this.busy.set(false);
    }
  }

  /** A Requirement's dependencies as the picker holds them, titled from the board (or the id, until read). */
  private dependenciesOf(source: Requirement): ChosenDependency[] {
    return (source.dependsOn ?? []).map((d) => ({
      requirementId: d.requirementId,
      title: this.store.requirements().get(d.requirementId)?.title ?? d.requirementId,
      until: d.until,
    }));
  }

  /** Dependencies the board has not loaded show their id until read; then their title. */
  private readTitles(): void {
    for (const { requirementId: id } of this.dependsOn().filter((d) => d.title === d.requirementId)) {
      void this.store
        .read(id)
        .then(() => {
          const title = this.store.requirements().get(id)?.title;
          if (title) {
            this.dependsOn.update((list) => list.map((d) => (d.requirementId === id ? { ...d, title } : d)));
          }
        })
        .catch(() => undefined);
    }
  }

  private dependsOnBody(list = this.dependsOn()): { requirementId: string; until: 'done' | 'merged' }[] {
    return list.map((d) => ({ requirementId: d.requirementId, until: d.until }));
  }

  /** Only the fields that changed: a started Requirement refuses a title or provider even unchanged in spirit. */
  private changed(source: Requirement, fields: Omit<UpdateRequirement, 'autoReview'>): UpdateRequirement {
    const keys = ['title', 'description', 'provider', 'model', 'reasoningEffort'] as const;
    const changed: UpdateRequirement = Object.fromEntries(
      keys.filter((k) => fields[k] !== source[k]).map((k) => [k, fields[k]]),
    );
    const budget = fields.budget ?? null;
    if (budget?.maxTokens !== source.budget?.maxTokens || budget?.maxCostUsd !== source.budget?.maxCostUsd) {
      changed.budget = budget;
    }
    return changed;
  }

  /**
   * The budget the form says: both limits empty is no budget when editing, and the workspace's
   * default (the field left out) when creating or forking. A value the server refuses is its 400.
   */
  private budget(): { maxTokens: number | null; maxCostUsd: number | null } | null | undefined {
    const tokens = this.budgetTokens().trim();
    const cost = this.budgetCost().trim();
    if (!tokens && !cost) {
      return this.mode() === 'edit' ? null : undefined;
    }
    return { maxCostUsd: cost ? Number(cost) : null, maxTokens: tokens ? Number(tokens) : null };
  }

  /** Accepted but flagged: a model the catalog does not list (a typo, or a model it does not know yet). */
  private warnAbout(edited: EditedRequirement): void {
    if (edited.warnings.includes('unknown_model')) {
      this.notifier.info(this.t('models.unknownWarning', { model: edited.model ?? '' }));
    } else if (edited.warnings.includes('unsupported_reasoning_effort')) {
      this.notifier.info(
        this.t('models.effortWarning', { effort: edited.reasoningEffort ?? '', model: edited.model ?? '' }),
      );
    }
  }

  /** The body's autoReview: null when off; the reviewer left out for "the other one". */
  private autoReviewBody(): { provider?: Provider; maxRounds: number } | null {
    if (!this.autoReview()) {
      return null;
    }
    const rounds = Math.min(LIMITS.autoReviewMaxRounds, Math.max(1, Math.round(this.autoReviewRounds()) || 3));
    const provider = this.autoReviewProvider();
    return provider ? { maxRounds: rounds, provider } : { maxRounds: rounds };
  }

  private snapshot(): string {
    return JSON.stringify([
      this.title(),
      this.description(),
      this.provider(),
      this.model(),
      this.effort(),
      this.autoReviewBody(),
      this.budgetTokens(),
      this.budgetCost(),
      this.dependsOnBody(),
      this.baseRef(),
    ]);
  }
}
