import { ChangeDetectionStrategy, Component, computed, effect, inject, output, signal, untracked, viewChild } from '@angular/core';

import { I18n } from '../core/i18n';
import type { Configuration, ConfigurationValues } from '../core/models';
import { Notifier } from '../core/notifier';
import { ConfigurationStore } from '../core/stores/configuration-store';
import { Modal } from './modal';

type Field = keyof ConfigurationValues;
interface FieldSpec {
  key: Field;
  type: 'number' | 'text' | 'nullable' | 'secret' | 'select';
  options?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { key: 'pullRequestReconcileIntervalSeconds', type: 'number' },
  { key: 'rdInactivityTimeoutSeconds', type: 'number' },
  { key: 'doneRequirementRetentionDays', type: 'number' },
  { key: 'cancelledRequirementRetentionDays', type: 'number' },
  { key: 'logLevel', options: ['error', 'warn', 'info', 'debug'], type: 'select' },
  { key: 'codexExecutable', type: 'text' },
  { key: 'claudeExecutable', type: 'text' },
  { key: 'host', type: 'text' },
  { key: 'port', type: 'number' },
  { key: 'authentication', options: ['token', 'none'], type: 'select' },
  { key: 'agentIsolation', options: ['auto', 'off'], type: 'select' },
  { key: 'githubApiUrl', type: 'text' },
  { key: 'githubWebhookSecret', type: 'secret' },
  { key: 'allowedOrigin', type: 'nullable' },
  { key: 'databasePath', type: 'nullable' },
  { key: 'logFilePath', type: 'nullable' },
  { key: 'logMaxSize', type: 'text' },
  { key: 'logMaxFiles', type: 'text' },
];

@Component({
  selector: 'am-settings-dialog',
  imports: [Modal],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <dialog amModal (amClosed)="closed.emit()" aria-labelledby="settings-title" data-testid="settings-dialog">
      <form (submit)="onSave($event)">
        <h2 id="settings-title">{{ t('settings.title') }}</h2>
        @if (config(); as c) {
          <p class="muted">
            {{ t('settings.file') }}: <code>{{ c.path }}</code>
          </p>
          @if (c.restartRequired) {
            <p class="badge warn" role="status" data-testid="restart-pending">{{ t('settings.restartPending', { f: c.restartRequiredFields.join(', ') }) }}</p>
          }
          <div class="kv" style="align-items: center">
            @for (f of fields; track f.key) {
              <label [for]="'cfg-' + f.key" style="display: block">
                <code>{{ f.key }}</code>
                @if (!live().has(f.key)) {
                  <span class="badge warn" style="margin-left: 0.3rem">{{ t('settings.restart') }}</span>
                }
              </label>
              <div>
                @if (f.type === 'select') {
                  <select [id]="'cfg-' + f.key" (change)="set(f, $event)">
                    @for (o of f.options; track o) {
                      <option [value]="o" [selected]="o === draft()[f.key]">{{ o }}</option>
                    }
                  </select>
                } @else {
                  <input
                    [id]="'cfg-' + f.key"
                    [type]="f.type === 'number' ? 'number' : f.type === 'secret' ? 'password' : 'text'"
                    autocomplete="off"
                    [value]="draft()[f.key] ?? ''"
                    (input)="set(f, $event)"
                    style="width: 100%"
                  />
                }
                @if (c.overriddenFields.includes(f.key)) {
                  <div class="muted" style="font-size: 0.8em">{{ t('settings.overridden') }}: {{ c.effective[f.key] }}</div>
                }
              </div>
            }
          </div>
        } @else {
          <p class="muted">{{ t('board.loading') }}</p>
        }
        <label class="inline"
          ><input type="checkbox" [checked]="notifier.browserEnabled()" (change)="notifier.setBrowserEnabled($any($event.target).checked)" data-testid="notifications" />
          {{ t('settings.notifications') }}</label
        >
        <div class="row">
          <span class="spacer"></span>
          <button type="button" (click)="modal().close()">{{ t('action.close') }}</button>
          <button type="submit" class="primary" [disabled]="!dirty() || busy()">{{ t('action.save') }}</button>
        </div>
      </form>
    </dialog>
  `,
})
export class SettingsDialog {
  readonly closed = output<void>();
  private readonly store = inject(ConfigurationStore);
  protected readonly notifier = inject(Notifier);
  protected readonly t = inject(I18n).t;
  protected readonly modal = viewChild.required(Modal);
  protected readonly fields = FIELDS;
  /** What the server applies at once (from the configuration response); every other field waits for a restart. */
  protected readonly live = computed(() => new Set<string>(this.config()?.liveFields ?? []));
  protected readonly config = signal<Configuration | null>(null);
  protected readonly draft = signal<Partial<Record<Field, string | number | string[] | null>>>({});
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
    const value = field.type === 'number' ? (raw === '' ? null : Number(raw)) : field.type === 'nullable' || field.type === 'secret' ? raw.trim() || null : raw;
    this.draft.update((d) => ({ ...d, [field.key]: value }));
  }

  private readonly patch = computed(() => {
    const values = this.config()?.values;
    const out: Record<string, unknown> = {};
    if (!values) {
      return out;
    }
    for (const [key, value] of Object.entries(this.draft())) {
      if (value !== values[key as Field]) {
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
      this.notifier.info(this.t('settings.saved'));
    } catch {
      // shown by the API service
    } finally {
      this.busy.set(false);
    }
  }

  private async load(): Promise<void> {
    try {
      this.accept(await this.store.read());
    } catch {
      // shown by the API service
    }
  }

  private accept(config: Configuration): void {
    this.config.set(config);
    this.draft.set({ ...config.values });
  }
}
