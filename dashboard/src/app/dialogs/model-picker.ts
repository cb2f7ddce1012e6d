import { ChangeDetectionStrategy, Component, computed, inject, input, model, signal } from '@angular/core';

import { I18n } from '../core/i18n';
import { REASONING_EFFORTS, type CatalogModel, type Provider, type ReasoningEffort } from '../core/api-types';
import { ModelCatalogStore } from '../core/stores/model-catalog-store';

/** The select's value for "type a model the catalog does not list". */
const CUSTOM = '__custom__';

/**
 * The model and effort fields of the Requirement dialogs: the models and efforts the provider
 * accepts, from the manager's model catalog (live on `model_catalog.updated`), and "Custom…" for
 * a name the catalog does not list (the server accepts it and flags it).
 */
@Component({
  selector: 'am-model-picker',
  changeDetection: ChangeDetectionStrategy.OnPush,
  // Its two labels sit in the dialog's row beside the provider, as the fields did before.
  host: { style: 'display: contents' },
  // The model takes the row's free width, so a custom name's field below it keeps the effort beside it.
  styles: `
    .model-field {
      flex: 1 1 12rem;
      min-width: 0;
    }
    .model-field select,
    .model-field input {
      width: 100%;
      box-sizing: border-box;
    }
    .model-field,
    .effort-field {
      align-self: flex-start;
    }
  `,
  template: `
    <label class="model-field">
      {{ t('detail.model') }}
      <select name="model" (change)="onPick(value($event))" data-testid="create-model">
        <option value="" [selected]="!custom() && modelId() === ''">{{ t('detail.default') }}</option>
        @for (m of models(); track m.id) {
          <option [value]="m.id" [selected]="!custom() && m.id === modelId()">
            {{ m.label === m.id ? m.id : m.label + ' (' + m.id + ')' }}
          </option>
        }
        <option [value]="customValue" [selected]="custom()">{{ t('models.custom') }}</option>
      </select>
      @if (custom()) {
        <input
          name="customModel"
          maxlength="100"
          [placeholder]="t('models.customPlaceholder')"
          [value]="modelId()"
          (input)="modelId.set(value($event))"
          [attr.aria-label]="t('models.customPlaceholder')"
          data-testid="create-model-custom"
        />
      }
      @if (stale(); as note) {
        <span class="muted model-stale" data-testid="model-catalog-stale" [title]="note.error ?? ''">{{
          t(note.error ? 'models.stale' : 'models.notListedYet')
        }}</span>
      }
    </label>
    <label class="effort-field">
      {{ t('detail.effort') }}
      <select name="effort" (change)="effort.set($any(value($event)))" data-testid="create-effort">
        <option value="" [selected]="effort() === ''">{{ t('detail.default') }}</option>
        @for (e of efforts(); track e) {
          <option [value]="e" [selected]="e === effort()">{{ e }}</option>
        }
      </select>
    </label>
  `,
})
export class ModelPicker {
  readonly provider = input.required<Provider>();
  readonly modelId = model('');
  readonly effort = model<ReasoningEffort | ''>('');
  private readonly catalog = inject(ModelCatalogStore);
  protected readonly customValue = CUSTOM;
  protected readonly t = inject(I18n).t;
  protected readonly custom = computed(() => this.customChosen() || (this.modelId() !== '' && !this.selected()));
  /** Set when the person picks "Custom…" (the name they type may match nothing yet). */
  private readonly customChosen = signal(false);

  protected readonly models = computed<CatalogModel[]>(() =>
    (this.catalog.catalog()?.items ?? []).filter((m) => m.provider === this.provider()),
  );
  private readonly selected = computed(() => this.models().find((m) => m.id === this.modelId()));
  /** The chosen model's efforts; every effort for the default or a custom model. The current one stays offered. */
  protected readonly efforts = computed<ReasoningEffort[]>(() => {
    const listed = this.custom() ? undefined : this.selected()?.efforts;
    const efforts: ReasoningEffort[] = listed ? [...listed] : [...REASONING_EFFORTS];
    const current = this.effort();
    return current !== '' && !efforts.includes(current) ? [...efforts, current] : efforts;
  });
  /** When the list may be out of date: the source's error, or none yet (never listed: the built-in list). */
  protected readonly stale = computed(() => {
    const part = this.catalog.catalog()?.providers.find((p) => p.provider === this.provider());
    return part?.stale ? { error: part.error } : null;
  });

  constructor() {
    void this.catalog.load();
  }

  protected value(event: Event): string {
    return (event.target as HTMLInputElement).value;
  }

  protected onPick(value: string): void {
    if (value === CUSTOM) {
      this.customChosen.set(true);
      return;
    }
    this.customChosen.set(false);
    this.modelId.set(value);
  }
}
