import {
  ChangeDetectionStrategy,
  Component,
  computed,
  effect,
  inject,
  output,
  signal,
  untracked,
  viewChild,
} from '@angular/core';

import type { Person } from '@libs/contracts';

import { Api, ApiError } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import type { Configuration, ConfigurationValues } from '../core/api-types';
import { Notifier } from '../core/notifier';
import { ConfigurationStore } from '../core/stores/configuration-store';
import { DevicesPanel } from './devices-panel';
import { Modal } from './modal';

type Field = keyof ConfigurationValues;
type DraftValue = string | number | string[] | null | readonly object[];
interface FieldSpec {
  key: Field;
  type: 'number' | 'text' | 'nullable' | 'secret' | 'select' | 'list' | 'json';
  options?: readonly string[];
  unit?: 'seconds' | 'days' | 'mb';
}

const FIELDS: readonly FieldSpec[] = [
  { key: 'pullRequestReconcileIntervalSeconds', type: 'number', unit: 'seconds' },
  { key: 'rdInactivityTimeoutSeconds', type: 'number', unit: 'seconds' },
  // Empty is null: no default limit.
  { key: 'defaultBudgetMaxTokens', type: 'number' },
  { key: 'defaultBudgetMaxCostUsd', type: 'number' },
  { key: 'doneRequirementRetentionDays', type: 'number', unit: 'days' },
  { key: 'cancelledRequirementRetentionDays', type: 'number', unit: 'days' },
  { key: 'logLevel', options: ['error', 'warn', 'info', 'debug'], type: 'select' },
  { key: 'codexExecutable', type: 'text' },
  { key: 'claudeExecutable', type: 'text' },
  { key: 'extraCodexModels', type: 'list' },
  { key: 'extraClaudeModels', type: 'list' },
  { key: 'modelCatalogRefreshHours', type: 'number' },
  // Empty is null: git's global user.name/user.email, else the OS account.
  { key: 'personName', type: 'nullable' },
  { key: 'personEmail', type: 'nullable' },
  { key: 'host', type: 'text' },
  { key: 'port', type: 'number' },
  { key: 'authentication', options: ['token', 'none'], type: 'select' },
  { key: 'agentIsolation', options: ['auto', 'off'], type: 'select' },
  { key: 'agentWritablePaths', type: 'list' },
  { key: 'agentEnvironmentPass', type: 'list' },
  { key: 'agentProcessLimit', type: 'number' },
  { key: 'agentTmpSizeMb', type: 'number', unit: 'mb' },
  { key: 'agentShmSizeMb', type: 'number', unit: 'mb' },
  { key: 'networkMode', options: ['allow_list', 'offline', 'open'], type: 'select' },
  { key: 'networkAllow', type: 'list' },
  { key: 'networkDeny', type: 'list' },
  // Names and sources only (never a value): edited as the JSON the configuration file holds.
  { key: 'secrets', type: 'json' },
  { key: 'isolation', options: ['worktree', 'in_place'], type: 'select' },
  { key: 'worktreeRoot', type: 'nullable' },
  { key: 'worktreeLinks', type: 'list' },
  { key: 'worktreeSetupCommand', type: 'nullable' },
  { key: 'worktreePool', type: 'number' },
  { key: 'worktreeTeardownCommand', type: 'nullable' },
  { key: 'worktreeIdleDays', type: 'number', unit: 'days' },
  { key: 'worktreeSubdirectory', type: 'nullable' },
  { key: 'runCommand', type: 'nullable' },
  { key: 'previewPath', type: 'nullable' },
  { key: 'readyPattern', type: 'nullable' },
  { key: 'maxPreviews', type: 'number' },
  { key: 'githubApiUrl', type: 'text' },
  { key: 'githubWebhookSecret', type: 'secret' },
  { key: 'gitlabApiUrl', type: 'text' },
  { key: 'gitlabWebhookSecret', type: 'secret' },
  { key: 'intakeWriteBack', options: ['work', 'work_and_cancel', 'off'], type: 'select' },
  { key: 'intakeLabels', type: 'list' },
  { key: 'intakeStart', options: ['todo', 'start'], type: 'select' },
  { key: 'intakeProvider', options: ['codex', 'claude-code'], type: 'select' },
  // Needs you outside the browser (issue 47 §3): edited as the JSON the configuration file holds.
  { key: 'notificationChannels', type: 'json' },
  { key: 'notificationWebhookSecret', type: 'secret' },
  { key: 'allowedOrigin', type: 'nullable' },
  { key: 'databasePath', type: 'nullable' },
  { key: 'databaseUrl', type: 'secret' },
  { key: 'databasePoolSize', type: 'number' },
  { key: 'databaseStatementTimeoutSeconds', type: 'number', unit: 'seconds' },
  { key: 'databaseTls', options: ['url', 'require', 'verify'], type: 'select' },
  { key: 'board', type: 'nullable' },
  { key: 'logFilePath', type: 'nullable' },
  { key: 'logMaxSize', type: 'text' },
  { key: 'logMaxFiles', type: 'text' },
];

@Component({
  selector: 'am-settings-dialog',
  imports: [DevicesPanel, Modal],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <dialog amModal (amClosed)="closed.emit()" aria-labelledby="settings-title" data-testid="settings-dialog">
      <form (submit)="onSave($event)">
        <h2 id="settings-title">{{ t('settings.title') }}</h2>
        @if (config(); as c) {
          <p class="muted">
            {{ t('settings.file') }}: <code>{{ c.path }}</code>
          </p>
          @if (you(); as p) {
            <!-- Who this manager's events and messages name (team mode): a person checks it is them. -->
            <p class="muted" data-testid="settings-you" [attr.data-person-id]="p.id">
              {{ t('settings.you', { n: p.email ? p.name + ' <' + p.email + '>' : p.name }) }} ·
              {{ t(keyOf('personSource', p.source)) }}
            </p>
          }
          @if (c.restartRequired) {
            <p class="badge warn" role="status" data-testid="restart-pending">
              {{ t('settings.restartPending', { f: c.restartRequiredFields.join(', ') }) }}
            </p>
          }
          <am-devices-panel />
          <div class="settings-fields">
            @for (f of fields; track f.key) {
              <div class="setting" [class.invalid]="errors()[f.key]" [attr.data-field]="f.key">
                <label [for]="'cfg-' + f.key" class="setting-label">
                  <span>{{ t(keyOf('cfg', f.key)) }}</span>
                  @if (!live().has(f.key)) {
                    <span class="badge warn">{{ t('settings.restart') }}</span>
                  }
                </label>
                <div class="setting-input">
                  @if (f.type === 'select') {
                    <select [id]="'cfg-' + f.key" (change)="set(f, $event)" [attr.aria-describedby]="'help-' + f.key">
                      @for (o of f.options; track o) {
                        <option [value]="o" [selected]="o === draft()[f.key]">{{ o }}</option>
                      }
                    </select>
                  } @else if (f.type === 'json') {
                    <textarea
                      [id]="'cfg-' + f.key"
                      rows="4"
                      spellcheck="false"
                      [value]="asJson(draft()[f.key])"
                      (input)="set(f, $event)"
                      [attr.aria-invalid]="!!errors()[f.key]"
                      [attr.aria-describedby]="'help-' + f.key + (errors()[f.key] ? ' error-' + f.key : '')"
                    ></textarea>
                  } @else {
                    <input
                      [id]="'cfg-' + f.key"
                      [type]="f.type === 'number' ? 'number' : f.type === 'secret' ? 'password' : 'text'"
                      autocomplete="off"
                      [value]="shown(draft()[f.key])"
                      (input)="set(f, $event)"
                      [attr.aria-invalid]="!!errors()[f.key]"
                      [attr.aria-describedby]="'help-' + f.key + (errors()[f.key] ? ' error-' + f.key : '')"
                    />
                  }
                  @if (f.unit) {
                    <span class="muted unit">{{ t(keyOf('unit', f.unit)) }}</span>
                  }
                </div>
                <div class="muted help" [id]="'help-' + f.key">
                  {{ t(helpKey(f.key)) }} · <code>{{ f.key }}</code>
                </div>
                @if (errors()[f.key]; as error) {
                  <div class="field-error" [id]="'error-' + f.key" role="alert" data-testid="field-error">
                    {{ error }}
                  </div>
                }
                @if (c.overriddenFields.includes(f.key)) {
                  <div class="muted help">{{ t('settings.overridden') }}: {{ c.effective[f.key] }}</div>
                }
              </div>
            }
          </div>
        } @else {
          <p class="muted">{{ t('board.loading') }}</p>
        }
        <label class="inline"
          ><input
            type="checkbox"
            [checked]="notifier.browserEnabled()"
            (change)="notifier.setBrowserEnabled($any($event.target).checked)"
            data-testid="notifications"
          />
          {{ t('settings.notifications') }}</label
        >
        <!-- Sticky: Save stays in view however long the list is. -->
        <div class="row dialog-footer">
          @if (hasErrors()) {
            <span class="field-error">{{ t('settings.invalid') }}</span>
          }
          <span class="spacer"></span>
          <button type="button" (click)="modal().close()">{{ t('action.close') }}</button>
          <button type="submit" class="primary" [disabled]="!dirty() || busy()" data-testid="settings-save">
            {{ t('action.save') }}
          </button>
        </div>
      </form>
    </dialog>
  `,
})
export class SettingsDialog {
  readonly closed = output<void>();
  private readonly store = inject(ConfigurationStore);
  private readonly api = inject(Api);
  /** Who requests from this dashboard act as (`GET /api/workspace`'s person), fixed for the manager's life. */
  protected readonly you = signal<Person | null>(null);
  protected readonly notifier = inject(Notifier);
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  /** The server's refusal, per field it names (shown under that field instead of a toast). */
  protected readonly errors = signal<Partial<Record<Field, string>>>({});
  protected readonly hasErrors = computed(() => Object.keys(this.errors()).length > 0);
  protected readonly modal = viewChild.required(Modal);
  protected readonly fields = FIELDS;
  /** What the server applies at once (from the configuration response); every other field waits for a restart. */
  protected readonly live = computed(() => new Set<string>(this.config()?.liveFields ?? []));
  protected readonly config = signal<Configuration | null>(null);
  protected readonly draft = signal<Partial<Record<Field, DraftValue>>>({});
  protected readonly busy = signal(false);
  protected readonly dirty = computed(() => Object.keys(this.patch()).length > 0);

  constructor() {
    // Re-read when someone else changes the configuration (manager.configuration.updated).
    effect(() => {
      this.store.version();
      untracked(() => void this.load());
    });
  }

  protected set(field: FieldSpec, event: Event): void {
    const raw = (event.target as HTMLInputElement).value;
    if (field.type === 'json') {
      this.setJson(field, raw);
      return;
    }
    const value =
      field.type === 'number'
        ? raw === ''
          ? null
          : Number(raw)
        : field.type === 'list'
          ? raw
              .split(',')
              .map((item) => item.trim())
              .filter((item) => item.length > 0)
          : field.type === 'nullable' || field.type === 'secret'
            ? raw.trim() || null
            : raw;
    this.draft.update((d) => ({ ...d, [field.key]: value }));
    if (this.errors()[field.key]) {
      this.errors.update(({ [field.key]: _fixed, ...rest }) => rest);
    }
  }

  /** JSON text that does not parse is marked at once and kept out of the change (the last good value stays). */
  private setJson(field: FieldSpec, raw: string): void {
    let value: unknown;
    try {
      value = raw.trim() === '' ? [] : JSON.parse(raw);
    } catch (err) {
      this.errors.update((e) => ({ ...e, [field.key]: `${field.key}: ${(err as Error).message}` }));
      return;
    }
    this.draft.update((d) => ({ ...d, [field.key]: value as DraftValue }));
    this.errors.update(({ [field.key]: _fixed, ...rest }) => rest);
  }

  /** A list field is edited as comma-separated text. */
  protected shown(value: DraftValue | undefined): string | number {
    return Array.isArray(value) ? value.join(', ') : ((value as string | number | null | undefined) ?? '');
  }

  protected asJson(value: DraftValue | undefined): string {
    return JSON.stringify(value ?? [], null, 1);
  }

  protected helpKey(field: Field): `cfg.${Field}.help` {
    return `cfg.${field}.help`;
  }

  private readonly patch = computed(() => {
    const values = this.config()?.values;
    const out: Record<string, unknown> = {};
    if (!values) {
      return out;
    }
    for (const [key, value] of Object.entries(this.draft())) {
      const current = values[key as Field];
      if (
        Array.isArray(value) && Array.isArray(current)
          ? JSON.stringify(value) !== JSON.stringify(current)
          : value !== current
      ) {
        out[key] = value;
      }
    }
    return out;
  });

  protected async onSave(event: Event): Promise<void> {
    event.preventDefault();
    this.busy.set(true);
    try {
      const next = await this.store.update(this.patch());
      this.accept(next);
      this.errors.set({});
      this.notifier.info(this.t('settings.saved'));
    } catch (err) {
      this.showRefusal(err);
    } finally {
      this.busy.set(false);
    }
  }

  /** class-validator's messages start with the property: mark each field named; anything else is a toast. */
  private showRefusal(err: unknown): void {
    const message = err instanceof ApiError ? err.message : String(err);
    const marked: Partial<Record<Field, string>> = {};
    const rest: string[] = [];
    for (const part of message.split('; ')) {
      const field = FIELDS.find(
        (f) =>
          part.startsWith(`${f.key} `) ||
          part.includes(`"${f.key}"`) ||
          part.startsWith(`${f.key}:`) ||
          part.startsWith(`${f.key}[`),
      );
      if (field) {
        marked[field.key] = part;
      } else {
        rest.push(part);
      }
    }
    this.errors.set(marked);
    if (rest.length > 0 || Object.keys(marked).length === 0) {
      this.notifier.error(
        err instanceof ApiError && err.status ? `${err.status} · ${rest.join('; ') || message}` : message,
      );
    }
    const first = Object.keys(marked)[0];
    if (first) {
      document.getElementById(`cfg-${first}`)?.focus();
    }
  }

  private async load(): Promise<void> {
    try {
      this.accept(await this.store.read());
      if (this.you() === null) {
        this.you.set((await this.api.call(this.api.client.GET('/api/workspace'), true)).person);
      }
    } catch {
      // shown by the API service (the person line is left out quietly)
    }
  }

  private accept(config: Configuration): void {
    this.config.set(config);
    this.draft.set({ ...config.values });
  }
}
