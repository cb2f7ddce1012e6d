import { NgTemplateOutlet } from '@angular/common';
import { ChangeDetectionStrategy, Component, DestroyRef, computed, inject, signal } from '@angular/core';
import type { components } from '@libs/api-client';

import { Api } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { RequirementsStore } from '../core/stores/requirements-store';
import { doctorText } from './doctor-text';

type DoctorReport = components['schemas']['DoctorReportDto'];
type DoctorCheck = components['schemas']['DoctorCheckDto'];

const DISMISSED_KEY = 'am.setup.dismissed';
/** How long after the board opens the findings are asked for. */
const PROBE_DELAY_MS = 1500;

/**
 * `agent-manager doctor`'s findings, on the first start (no Requirement yet), and whenever
 * something is broken or required fails: what each check found and how to fix it. Dismissing it
 * hides these findings; a different finding later shows it again.
 */
@Component({
  selector: 'am-setup-panel',
  imports: [NgTemplateOutlet],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    @if (visible(); as report) {
      <section class="setup-panel card" data-testid="setup-panel" [attr.aria-label]="t('setup.title')">
        <header class="setup-head">
          <h2>{{ firstStart() ? t('setup.welcome') : t('setup.title') }}</h2>
          <span class="spacer"></span>
          <button type="button" class="small" (click)="refresh()" [disabled]="checking()" data-testid="setup-recheck">
            {{ checking() ? t('setup.checking') : t('setup.recheck') }}
          </button>
          <button
            type="button"
            class="ghost small"
            (click)="dismiss(report)"
            data-testid="setup-dismiss"
            [attr.aria-label]="t('action.close')"
          >
            ✕
          </button>
        </header>
        <p class="muted" data-testid="setup-summary">{{ t(summaryKey(report)) }} {{ t('setup.oneAgent') }}</p>
        <ul class="setup-checks">
          @for (check of report.checks; track check.id) {
            @if (check.status !== 'ok') {
              <ng-container *ngTemplateOutlet="row; context: { $implicit: check }" />
            }
          }
        </ul>
        <details class="setup-passed">
          <summary>{{ t('setup.passed', { n: passed(report) }) }}</summary>
          <ul class="setup-checks">
            @for (check of report.checks; track check.id) {
              @if (check.status === 'ok') {
                <ng-container *ngTemplateOutlet="row; context: { $implicit: check }" />
              }
            }
          </ul>
        </details>
        <ng-template #row let-check>
          <li [class]="'setup-check ' + check.status" [attr.data-check]="check.id" [attr.data-status]="check.status">
            <span class="mark" aria-hidden="true">{{
              check.status === 'ok' ? '✓' : check.status === 'warn' ? '!' : '✗'
            }}</span>
            <span class="sr-only">{{ statusLabel(check) }}</span>
            @let text = say(check);
            <strong>{{ text.title }}</strong>
            <span class="detail" data-testid="setup-detail">{{ text.detail }}</span>
            @if (text.fix) {
              <span class="fix" data-testid="setup-fix">→ {{ text.fix }}</span>
            }
          </li>
        </ng-template>
        <p class="muted small">{{ t('setup.cli') }} <code>agent-manager doctor</code></p>
      </section>
    }
  `,
})
export class SetupPanel {
  private readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  private readonly api = inject(Api);
  private readonly requirements = inject(RequirementsStore);

  private readonly report = signal<DoctorReport | null>(null);
  protected readonly checking = signal(false);
  private readonly dismissed = signal<string | null>(localStorage.getItem(DISMISSED_KEY));

  /** No Requirement in view once loaded: most likely the first start. */
  protected readonly firstStart = computed(
    () => !this.requirements.loading() && this.requirements.requirements().size === 0,
  );
  protected readonly visible = computed(() => {
    const report = this.report();
    if (!report || this.dismissed() === fingerprint(report)) {
      return null;
    }
    // Something broken (a configured CLI path that does not work, a rejected token) or required
    // missing; not one agent CLI missing beside the other (one is enough), nor merely logged out
    // (the panel then says so too, but is not raised for it).
    const broken = report.checks.some((c) => c.status === 'fail');
    return this.firstStart() || broken || !report.ok ? report : null;
  });

  constructor() {
    // After the board's own reads: the first probe runs the agent CLIs and git on the server,
    // seconds of CPU that would otherwise compete with the board's first paint.
    const timer = setTimeout(() => void this.load(false), PROBE_DELAY_MS);
    inject(DestroyRef).onDestroy(() => clearTimeout(timer));
  }

  /** The finding in the reader's language; read in the template, so it follows the language signal. */
  protected say(check: DoctorCheck): { title: string; detail: string; fix: string | null } {
    return doctorText(check, this.i18n);
  }

  protected statusLabel(check: DoctorCheck): string {
    return this.t(keyOf('setup.status', check.status));
  }

  /** "Everything is here" only when it is: a working manager with a broken item says that instead. */
  protected summaryKey(report: DoctorReport): 'setup.ready' | 'setup.usable' | 'setup.blocked' {
    if (!report.ok) {
      return 'setup.blocked';
    }
    return report.checks.every((c) => c.status === 'ok') ? 'setup.ready' : 'setup.usable';
  }

  protected passed(report: DoctorReport): number {
    return report.checks.filter((c) => c.status === 'ok').length;
  }

  protected refresh(): void {
    void this.load(true);
  }

  protected dismiss(report: DoctorReport): void {
    const print = fingerprint(report);
    localStorage.setItem(DISMISSED_KEY, print);
    this.dismissed.set(print);
  }

  private async load(refresh: boolean): Promise<void> {
    this.checking.set(true);
    try {
      // Quiet: the panel is a help, not something to raise an error toast about.
      this.report.set(
        await this.api.call(
          this.api.client.GET('/api/doctor', { params: { query: refresh ? { refresh: 'true' } : {} } }),
          true,
        ),
      );
    } catch {
      // An older manager without the endpoint, or a transient failure: no panel.
    } finally {
      this.checking.set(false);
    }
  }
}

/** What was found short of ok: the same findings stay dismissed, a new one shows the panel again. */
function fingerprint(report: DoctorReport): string {
  return report.checks
    .filter((c: DoctorCheck) => c.status !== 'ok')
    .map((c) => `${c.id}:${c.status}`)
    .join(',');
}
