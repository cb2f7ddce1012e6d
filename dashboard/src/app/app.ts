import { ChangeDetectionStrategy, Component, inject, signal } from '@angular/core';
import { RouterLink, RouterLinkActive, RouterOutlet } from '@angular/router';

import { I18n, type Language } from './core/i18n';
import { Notifier } from './core/notifier';
import { Store } from './core/store';
import { Theme } from './core/theme';
import { CreateRequirementDialog } from './dialogs/create-requirement-dialog';
import { SettingsDialog } from './dialogs/settings-dialog';

@Component({
  selector: 'am-root',
  imports: [RouterOutlet, RouterLink, RouterLinkActive, CreateRequirementDialog, SettingsDialog],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="shell">
      <header class="topbar">
        <span class="brand">{{ t('app.title') }}</span>
        <nav class="tabs" [attr.aria-label]="t('nav.main')">
          <a routerLink="/requirements" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.requirements') }}</a>
          <a routerLink="/pull-requests" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.pullRequests') }}</a>
          <a routerLink="/sessions" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.sessions') }}</a>
          <a routerLink="/timers" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.timers') }}</a>
        </nav>
        <span class="spacer"></span>
        <span class="conn" [class]="'conn ' + store.connection()" role="status" data-testid="connection">{{ t('conn.' + store.connection()) }}</span>
        <button type="button" class="primary" (click)="creating.set(true)" data-testid="new-requirement">+ {{ t('action.new') }}</button>
        <label class="inline">
          <span class="sr-only">{{ t('action.language') }}</span>
          <select [value]="i18n.language()" (change)="onLanguage($event)" data-testid="language" [attr.aria-label]="t('action.language')">
            <option value="en">English</option>
            <option value="zh-CN">简体中文</option>
          </select>
        </label>
        <button type="button" (click)="theme.cycle()" data-testid="theme" [attr.aria-label]="t('action.theme') + ': ' + t('theme.' + theme.choice())" [title]="t('action.theme')">
          {{ theme.choice() === 'dark' ? '☾' : theme.choice() === 'light' ? '☀' : '◐' }} {{ t('theme.' + theme.choice()) }}
        </button>
        <button type="button" (click)="settings.set(true)" data-testid="settings">⚙ {{ t('action.settings') }}</button>
      </header>
      <main class="page" id="main">
        <router-outlet />
      </main>
    </div>
    @if (creating()) {
      <am-create-requirement-dialog (closed)="creating.set(false)" />
    }
    @if (settings()) {
      <am-settings-dialog (closed)="settings.set(false)" />
    }
    <div class="toasts" aria-live="polite">
      @for (toast of notifier.toasts(); track toast.id) {
        <div class="toast" [class.error]="toast.kind === 'error'" [attr.role]="toast.kind === 'error' ? 'alert' : 'status'">
          <span class="spacer">{{ toast.text }}</span>
          <button type="button" class="ghost small" (click)="notifier.dismiss(toast.id)" [attr.aria-label]="t('action.close')">✕</button>
        </div>
      }
    </div>
  `,
})
export class App {
  protected readonly store = inject(Store);
  protected readonly i18n = inject(I18n);
  protected readonly theme = inject(Theme);
  protected readonly notifier = inject(Notifier);
  protected readonly t = this.i18n.t as (key: string, params?: Record<string, string | number>) => string;
  protected readonly creating = signal(false);
  protected readonly settings = signal(false);

  protected onLanguage(event: Event): void {
    this.i18n.setLanguage((event.target as HTMLSelectElement).value as Language);
  }
}
