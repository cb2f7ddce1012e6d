import { ChangeDetectionStrategy, Component, inject } from '@angular/core';

import { I18n } from '../core/i18n';
import { LoginState } from '../core/login-state';

/**
 * What a browser without the login cookie sees (see LoginState): where the login link comes from.
 * The link carries the token, so the page can only point at the terminal commands that print it.
 */
@Component({
  selector: 'am-logged-out-page',
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    /* Over the whole shell (which the app makes inert meanwhile). */
    :host {
      position: fixed;
      inset: 0;
      z-index: 1000;
      display: flex;
      align-items: flex-start;
      justify-content: center;
      overflow: auto;
      padding: 48px 16px;
      background: var(--am-bg);
      color: var(--am-text);
    }
    .logged-out {
      max-width: 560px;
      width: 100%;
      padding: 24px;
    }
    h1 {
      margin: 0 0 8px;
      font-size: 1.4rem;
    }
    ol {
      padding-left: 1.2em;
      line-height: 1.6;
    }
    /* A command is copied whole: never broken at its dashes. */
    .cmd {
      white-space: nowrap;
    }
    li + li {
      margin-top: 8px;
    }
    pre {
      margin: 4px 0 0;
      padding: 8px 10px;
      overflow-x: auto;
      border: 1px solid var(--am-border);
      border-radius: var(--am-radius);
      background: var(--am-bg);
    }
    @media (max-width: 640px) {
      :host {
        padding: 16px 8px;
      }
      .logged-out {
        padding: 16px;
      }
    }
  `,
  template: `
    <section
      class="logged-out card"
      data-testid="logged-out"
      role="alertdialog"
      aria-modal="true"
      aria-labelledby="logged-out-title"
    >
      <h1 id="logged-out-title">{{ t('login.title') }}</h1>
      @if (login.deviceRevoked()) {
        <p data-testid="device-revoked">{{ t('login.deviceRevoked') }}</p>
        <pre><code>agent-manager pair</code></pre>
      } @else {
        <p>{{ t('login.why') }}</p>
        <ol>
          <li>
            {{ t('login.token') }}
            <pre><code>agent-manager token</code></pre>
            <span class="muted small">{{ t('login.elsewhere') }}</span>
            <pre><code>agent-manager token --workspace /path/to/repo</code></pre>
          </li>
          <li>
            {{ t('login.start') }} <code class="cmd">agent-manager start --detach</code>,
            <code class="cmd">npm start</code>
          </li>
          <li>{{ t('login.open') }}</li>
        </ol>
      }
      <button type="button" class="primary" (click)="reload()" data-testid="logged-out-reload">
        {{ t('login.reload') }}
      </button>
    </section>
  `,
})
export class LoggedOutPage {
  protected readonly t = inject(I18n).t;
  protected readonly login = inject(LoginState);

  protected reload(): void {
    location.reload();
  }
}
