import { ChangeDetectionStrategy, Component, OnInit, inject, output, signal, viewChild } from '@angular/core';
import { Router } from '@angular/router';

import type { Schemas } from '@libs/api-client';

import { Api, ApiError } from '../core/api';
import { PROVIDERS, type Provider, type Requirement } from '../core/api-types';
import { I18n } from '../core/i18n';
import { RequirementsStore } from '../core/stores/requirements-store';
import { Modal } from './modal';

type ForgeIssue = Schemas['ForgeIssueDto'];

/**
 * New from issue (issue 49 §2): a page of the workspace repository's issues to pick from —
 * searched, filtered by label, several at once — each saying whether it was imported already
 * (and as which Requirement); the picked ones become Requirements in one import.
 */
@Component({
  selector: 'am-import-issues-dialog',
  imports: [Modal],
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    .issues {
      list-style: none;
      margin: 0;
      padding: 0;
      max-height: min(50vh, 28rem);
      overflow-y: auto;
      border: 1px solid var(--am-border);
      border-radius: 6px;
    }
    .issues li {
      display: flex;
      gap: 0.5rem;
      align-items: baseline;
      padding: 0.4rem 0.6rem;
      border-bottom: 1px solid var(--am-border);
      overflow-wrap: anywhere;
    }
    .issues li:last-child {
      border-bottom: 0;
    }
    .issues .labels {
      display: inline-flex;
      flex-wrap: wrap;
      gap: 0.25rem;
    }
    .issue-label {
      font-size: 0.75rem;
      padding: 0 0.35rem;
      border: 1px solid var(--am-border);
      border-radius: 999px;
    }
    .filters {
      display: flex;
      flex-wrap: wrap;
      gap: 0.5rem;
    }
    .filters label {
      flex: 1 1 10rem;
    }
  `,
  template: `
    <dialog amModal (amClosed)="closed.emit()" aria-labelledby="import-title" data-testid="import-dialog">
      <form (submit)="onImport($event)">
        <h2 id="import-title">{{ t('import.title') }}</h2>
        @if (repository(); as repo) {
          <p class="muted" data-testid="import-repository">{{ t('import.from', { s: repo }) }}</p>
        }
        <div class="filters">
          <label>
            {{ t('import.search') }}
            <input
              type="search"
              name="q"
              autocomplete="off"
              [value]="q()"
              (input)="q.set(value($event))"
              (keydown.enter)="$event.preventDefault(); reload()"
              data-testid="import-search"
            />
          </label>
          <label>
            {{ t('import.labels') }}
            <input
              name="labels"
              autocomplete="off"
              [placeholder]="t('import.labelsHint')"
              [value]="labels()"
              (input)="labels.set(value($event))"
              (keydown.enter)="$event.preventDefault(); reload()"
              data-testid="import-labels"
            />
          </label>
          <button type="button" class="filter-apply" (click)="reload()" data-testid="import-apply">
            {{ t('import.apply') }}
          </button>
        </div>
        @if (error(); as e) {
          <p class="field-error" role="alert" data-testid="import-error">{{ e }}</p>
        }
        <ul class="issues" data-testid="import-issues" [attr.aria-busy]="loading()">
          @for (issue of issues(); track issue.number) {
            <li [attr.data-number]="issue.number">
              <input
                type="checkbox"
                [id]="'issue-' + issue.number"
                [checked]="picked().has(issue.number)"
                [disabled]="issue.importedAs !== null"
                (change)="toggle(issue.number)"
                [attr.aria-label]="'#' + issue.number + ' ' + issue.title"
              />
              <label [for]="'issue-' + issue.number" class="inline">
                <span class="muted">#{{ issue.number }}</span> {{ issue.title }}
                <span class="labels">
                  @for (label of issue.labels; track label) {
                    <span class="issue-label">{{ label }}</span>
                  }
                </span>
              </label>
              <span class="spacer"></span>
              @if (issue.importedAs; as id) {
                <a (click)="open(id, $event)" [href]="'/requirements/' + id" data-testid="import-imported">{{
                  t('import.imported')
                }}</a>
              }
            </li>
          } @empty {
            <li class="muted">{{ loading() ? t('import.loading') : t('import.none') }}</li>
          }
        </ul>
        @if (cursor()) {
          <button type="button" (click)="more()" [disabled]="loading()" data-testid="import-more">
            {{ t('import.more') }}
          </button>
        }
        <div class="row">
          <label>
            {{ t('detail.provider') }}
            <select name="provider" (change)="provider.set($any(value($event)))" data-testid="import-provider">
              @for (p of providers; track p) {
                <option [value]="p" [selected]="p === provider()">{{ p }}</option>
              }
            </select>
          </label>
          <label class="inline"
            ><input
              type="checkbox"
              [checked]="startNow()"
              (change)="startNow.set(!startNow())"
              data-testid="import-start"
            />
            {{ t('create.startNow') }}</label
          >
        </div>
        <div class="row">
          <span class="spacer"></span>
          <button type="button" (click)="modal().close()">{{ t('action.cancel') }}</button>
          <button type="submit" class="primary" [disabled]="picked().size === 0 || busy()" data-testid="import-submit">
            {{ t('import.submit', { n: picked().size }) }}
          </button>
        </div>
      </form>
    </dialog>
  `,
})
export class ImportIssuesDialog implements OnInit {
  readonly closed = output<void>();
  private readonly api = inject(Api);
  private readonly store = inject(RequirementsStore);
  private readonly router = inject(Router);
  protected readonly t = inject(I18n).t;
  protected readonly modal = viewChild.required(Modal);
  protected readonly providers = PROVIDERS;
  protected readonly q = signal('');
  protected readonly labels = signal('');
  protected readonly issues = signal<ForgeIssue[]>([]);
  protected readonly repository = signal<string | null>(null);
  /** The listed repository's forge: the import names it (one path may be a remote on both). */
  private readonly forge = signal<'github' | 'gitlab' | null>(null);
  protected readonly cursor = signal<string | null>(null);
  protected readonly picked = signal(new Set<number>());
  protected readonly provider = signal<Provider>('codex');
  protected readonly startNow = signal(false);
  protected readonly loading = signal(false);
  protected readonly busy = signal(false);
  protected readonly error = signal<string | null>(null);
  private generation = 0;

  ngOnInit(): void {
    void this.reload();
  }

  protected value(event: Event): string {
    return (event.target as HTMLInputElement).value;
  }

  protected toggle(number: number): void {
    const next = new Set(this.picked());
    if (!next.delete(number)) {
      next.add(number);
    }
    this.picked.set(next);
  }

  /** The first page for the search and labels as typed (what was picked stays picked). */
  protected async reload(): Promise<void> {
    this.issues.set([]);
    this.cursor.set(null);
    await this.load(undefined);
  }

  protected async more(): Promise<void> {
    await this.load(this.cursor() ?? undefined);
  }

  private async load(cursor: string | undefined): Promise<void> {
    // A page asked for before the filters changed is dropped when it comes.
    const generation = ++this.generation;
    this.loading.set(true);
    this.error.set(null);
    try {
      const page = await this.api.call(
        this.api.client.GET('/api/forge/issues', {
          params: {
            query: {
              cursor,
              labels: this.labels().trim() || undefined,
              q: this.q().trim() || undefined,
            },
          },
        }),
        true,
      );
      if (generation !== this.generation) {
        return;
      }
      this.repository.set(page.repository);
      this.forge.set(page.forge);
      this.issues.update((shown) => [...shown, ...page.items]);
      this.cursor.set(page.nextCursor);
    } catch (err) {
      // Said here, where the person is looking (no repository on GitHub, no token, GitHub down).
      if (generation === this.generation) {
        this.error.set(err instanceof ApiError ? err.message : String(err));
      }
    } finally {
      if (generation === this.generation) {
        this.loading.set(false);
      }
    }
  }

  protected async onImport(event: Event): Promise<void> {
    event.preventDefault();
    const repository = this.repository();
    if (repository === null || this.picked().size === 0) {
      return;
    }
    this.busy.set(true);
    this.error.set(null);
    try {
      const made = await this.api.call(
        this.api.client.POST('/api/requirements/import', {
          body: {
            ...(this.forge() !== null && { forge: this.forge()! }),
            numbers: [...this.picked()],
            provider: this.provider(),
            repository,
            start: this.startNow(),
          },
        }),
        true,
      );
      made.items.forEach((requirement: Requirement) => this.store.accept(requirement));
      if (made.notStarted.length > 0) {
        this.error.set(made.notStarted.map((n) => `${n.requirementId}: ${n.reason}`).join('\n'));
        this.picked.set(new Set());
        await this.reload();
        return;
      }
      this.modal().close();
      if (made.items.length === 1) {
        await this.router.navigate(['/requirements', made.items[0].id]);
      }
    } catch (err) {
      this.error.set(err instanceof ApiError ? err.message : String(err));
    } finally {
      this.busy.set(false);
    }
  }

  protected open(id: string, event: Event): void {
    event.preventDefault();
    this.modal().close();
    void this.router.navigate(['/requirements', id]);
  }
}
