import { ChangeDetectionStrategy, Component, inject, output, signal, viewChild } from '@angular/core';
import { Router } from '@angular/router';

import { I18n } from '../core/i18n';
import { PROVIDERS, REASONING_EFFORTS, type Provider, type ReasoningEffort } from '../core/models';
import { RequirementsStore } from '../core/stores/requirements-store';
import { Modal } from './modal';

@Component({
  selector: 'am-create-requirement-dialog',
  imports: [Modal],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <dialog amModal (amClosed)="closed.emit()" aria-labelledby="create-title" data-testid="create-dialog">
      <form (submit)="onSubmit($event)">
        <h2 id="create-title">{{ t('create.title') }}</h2>
        <label>
          {{ t('create.name') }}
          <input name="title" required maxlength="200" autofocus [value]="title()" (input)="title.set(value($event))" data-testid="create-title" />
        </label>
        <label>
          {{ t('create.description') }}
          <textarea name="description" rows="6" [value]="description()" (input)="description.set(value($event))" data-testid="create-description"></textarea>
        </label>
        <div class="row">
          <label>
            {{ t('detail.provider') }}
            <select name="provider" (change)="provider.set($any(value($event)))" data-testid="create-provider">
              @for (p of providers; track p) {
                <option [value]="p" [selected]="p === provider()">{{ p }}</option>
              }
            </select>
          </label>
          <label>
            {{ t('detail.model') }}
            <input name="model" maxlength="100" [placeholder]="t('detail.default')" (input)="model.set(value($event))" />
          </label>
          <label>
            {{ t('detail.effort') }}
            <select name="effort" (change)="effort.set($any(value($event)))">
              <option value="">{{ t('detail.default') }}</option>
              @for (e of efforts; track e) {
                <option [value]="e">{{ e }}</option>
              }
            </select>
          </label>
        </div>
        <label class="inline"><input type="checkbox" (change)="startNow.set($any($event.target).checked)" /> {{ t('create.startNow') }}</label>
        <div class="row">
          <span class="spacer"></span>
          <button type="button" (click)="modal().close()">{{ t('action.cancel') }}</button>
          <button type="submit" class="primary" [disabled]="busy() || !title().trim()" data-testid="create-submit">{{ t('action.create') }}</button>
        </div>
      </form>
    </dialog>
  `,
})
export class CreateRequirementDialog {
  readonly closed = output<void>();
  private readonly store = inject(RequirementsStore);
  private readonly router = inject(Router);
  protected readonly t = inject(I18n).t;
  protected readonly modal = viewChild.required(Modal);
  protected readonly providers = PROVIDERS;
  protected readonly efforts = REASONING_EFFORTS;
  protected readonly title = signal('');
  protected readonly description = signal('');
  protected readonly provider = signal<Provider>('codex');
  protected readonly model = signal('');
  protected readonly effort = signal<ReasoningEffort | ''>('');
  protected readonly startNow = signal(false);
  protected readonly busy = signal(false);

  protected value(event: Event): string {
    return (event.target as HTMLInputElement).value;
  }

  protected async onSubmit(event: Event): Promise<void> {
    event.preventDefault();
    this.busy.set(true);
    try {
      const created = await this.store.create({
        description: this.description(),
        model: this.model().trim() || null,
        provider: this.provider(),
        reasoningEffort: this.effort() || null,
        title: this.title().trim(),
      });
      if (this.startNow()) {
        await this.store.start(created.id);
      }
      this.modal().close();
      void this.router.navigate(['/requirements', created.id]);
    } catch {
      // The API service already told the person what went wrong.
    } finally {
      this.busy.set(false);
    }
  }
}
