import { ChangeDetectionStrategy, Component, effect, inject, signal } from '@angular/core';
import { takeUntilDestroyed } from '@angular/core/rxjs-interop';
import { Router, RouterLink, RouterLinkActive, RouterOutlet } from '@angular/router';

import { AttentionStore } from './core/stores/attention-store';
import { Favicon } from './core/favicon';
import { shortcutAllowed } from './core/shortcuts';
import { I18n, type Language, keyOf } from './core/i18n';
import { LoginState } from './core/login-state';
import { Notifier } from './core/notifier';
import { PageTitle } from './core/page-title';
import { LiveSync } from './core/stores/live-sync';
import { Theme } from './core/theme';
import { CreateRequirementDialog } from './dialogs/create-requirement-dialog';
import { ImportIssuesDialog } from './dialogs/import-issues-dialog';
import { SettingsDialog } from './dialogs/settings-dialog';
import { LoggedOutPage } from './login/logged-out-page';
import { SearchBox } from './search/search-box';

@Component({
  selector: 'am-root',
  imports: [
    RouterOutlet,
    RouterLink,
    RouterLinkActive,
    CreateRequirementDialog,
    ImportIssuesDialog,
    LoggedOutPage,
    SearchBox,
    SettingsDialog,
  ],
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { '(document:keydown)': 'onKey($event)' },
  template: `
    <!-- Logged out, the page says how to log in; the shell stays below it, inert, so nothing of it is reachable. -->
    @if (login.loggedOut()) {
      <am-logged-out-page />
    }
    <div class="shell" [inert]="login.loggedOut()">
      <a class="skip-link" href="#main" (click)="onSkip($event)" data-testid="skip-link">{{ t('nav.skip') }}</a>
      <header class="topbar">
        <span class="brand">{{ t('app.title') }}</span>
        <nav class="tabs" [attr.aria-label]="t('nav.main')">
          <a
            routerLink="/attention"
            routerLinkActive="active"
            ariaCurrentWhenActive="page"
            class="attention"
            [class.hot]="waiting() > 0"
            data-testid="attention"
            [attr.data-count]="waiting()"
            [attr.aria-label]="t('attention.count', { n: waiting() })"
            [title]="t('attention.count', { n: waiting() }) + ' (g n)'"
            >⚑ <span class="label desk-only">{{ t('nav.attention') }}</span>
            <span class="badge">{{ waiting() }}</span></a
          >
          <a routerLink="/requirements" routerLinkActive="active" ariaCurrentWhenActive="page">{{
            t('nav.requirements')
          }}</a>
          <a routerLink="/pull-requests" routerLinkActive="active" ariaCurrentWhenActive="page">{{
            t('nav.pullRequests')
          }}</a>
          <a routerLink="/sessions" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.sessions') }}</a>
          <a routerLink="/timers" routerLinkActive="active" ariaCurrentWhenActive="page">{{ t('nav.timers') }}</a>
        </nav>
        <span class="spacer"></span>
        <am-search-box />
        <span
          class="conn"
          [class]="'conn ' + sync.connection()"
          role="status"
          data-testid="connection"
          [attr.aria-label]="t('conn.label', { s: t(keyOf('conn', sync.connection())) })"
          [title]="t('conn.label', { s: t(keyOf('conn', sync.connection())) })"
          ><span class="label wide-only">{{ t(keyOf('conn', sync.connection())) }}</span></span
        >
        <button
          type="button"
          class="primary"
          (click)="creating.set(true)"
          data-testid="new-requirement"
          [attr.aria-label]="t('action.new')"
        >
          + <span class="label">{{ t('action.new') }}</span>
        </button>
        <label class="inline">
          <span class="sr-only">{{ t('action.language') }}</span>
          <select
            [value]="i18n.language()"
            (change)="onLanguage($event)"
            data-testid="language"
            [attr.aria-label]="t('action.language')"
          >
            <option value="en">English</option>
            <option value="zh-CN">简体中文</option>
          </select>
        </label>
        <button
          type="button"
          (click)="theme.cycle()"
          data-testid="theme"
          [attr.aria-label]="t('action.theme') + ': ' + t(keyOf('theme', theme.choice()))"
          [title]="t('action.theme')"
        >
          {{ theme.choice() === 'dark' ? '☾' : theme.choice() === 'light' ? '☀' : '◐' }}
          <span class="label wide-only">{{ t(keyOf('theme', theme.choice())) }}</span>
        </button>
        <button
          type="button"
          (click)="settings.set(true)"
          data-testid="settings"
          [attr.aria-label]="t('action.settings')"
        >
          ⚙ <span class="label wide-only">{{ t('action.settings') }}</span>
        </button>
      </header>
      <main class="page" id="main" tabindex="-1">
        <router-outlet />
      </main>
    </div>
    <!-- The dialogs (the model picker, the budget and settings fields) are not part of the first
    paint: their code loads once the page is idle, or at once when one is opened before that. -->
    @defer (on idle; when creating() || settings() || importing()) {
      @if (creating()) {
        <am-create-requirement-dialog (closed)="creating.set(false)" (fromIssue)="importing.set(true)" />
      }
      @if (importing()) {
        <am-import-issues-dialog (closed)="importing.set(false)" />
      }
      @if (settings()) {
        <am-settings-dialog (closed)="settings.set(false)" />
      }
    }
    <div class="toasts" aria-live="polite">
      @for (toast of notifier.toasts(); track toast.id) {
        <div
          class="toast"
          [class.error]="toast.kind === 'error'"
          [attr.role]="toast.kind === 'error' ? 'alert' : 'status'"
        >
          <span class="spacer">
            <span class="toast-text" data-testid="toast-text">{{ toast.text }}</span>
            @if (toast.detail) {
              <details class="toast-detail" data-testid="toast-detail">
                <summary>{{ t('toast.details') }}</summary>
                <pre>{{ toast.detail }}</pre>
              </details>
            }
          </span>
          <button
            type="button"
            class="ghost small"
            (click)="notifier.dismiss(toast.id)"
            [attr.aria-label]="t('action.close')"
          >
            ✕
          </button>
        </div>
      }
    </div>
  `,
})
export class App {
  /** Injected here so the snapshots and the event stream start with the shell. */
  protected readonly sync = inject(LiveSync);
  protected readonly i18n = inject(I18n);
  protected readonly theme = inject(Theme);
  protected readonly notifier = inject(Notifier);
  protected readonly login = inject(LoginState);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly creating = signal(false);
  /** New from issue (issue 49 §2). */
  protected readonly importing = signal(false);
  protected readonly settings = signal(false);
  private readonly router = inject(Router);
  private readonly attention = inject(AttentionStore);
  /** What needs the person (issue 47): counted in the navigation, the tab's title and its icon. */
  protected readonly waiting = this.attention.count;
  /** When `g` was pressed: `g n` within a second goes to Needs you. */
  private gAt = 0;

  constructor() {
    const title = inject(PageTitle);
    const favicon = inject(Favicon);
    effect(() => {
      title.waiting.set(this.waiting());
      favicon.show(this.waiting());
    });
    // A desktop notification names why the person is needed; clicking it opens the Requirement.
    this.attention.opened$.pipe(takeUntilDestroyed()).subscribe((item) => {
      const title = this.attention.requirement(item.requirementId)?.title ?? item.requirementId;
      this.notifier.desktop(
        this.t('notify.attention', { s: this.t(keyOf('attention', item.reason)) }),
        `${title} — ${item.summary}`,
        () => void this.router.navigate(['/requirements', item.requirementId]),
        item.id,
      );
    });
  }

  /** `g n`: Needs you, from anywhere but a text field. */
  protected onKey(event: KeyboardEvent): void {
    if (!shortcutAllowed(event)) {
      return;
    }
    if (event.key === 'g') {
      this.gAt = Date.now();
    } else if (event.key === 'n' && Date.now() - this.gAt < 1000) {
      this.gAt = 0;
      event.preventDefault();
      void this.router.navigate(['/attention']);
    }
  }

  /** The skip link moves focus past the header (the router would treat a bare #main as a navigation). */
  protected onSkip(event: Event): void {
    event.preventDefault();
    document.getElementById('main')?.focus();
  }

  protected onLanguage(event: Event): void {
    this.i18n.setLanguage((event.target as HTMLSelectElement).value as Language);
  }
}
