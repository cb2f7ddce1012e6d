import { ChangeDetectionStrategy, Component, inject, input, model, signal } from '@angular/core';

import { LIMITS } from '@libs/contracts';

import { Api } from '../core/api';
import { I18n } from '../core/i18n';
import type { SearchHit } from '../core/api-types';

/** One chosen dependency: what the API takes (`requirementId`, `until`) and the title shown for it. */
export interface ChosenDependency {
  requirementId: string;
  until: 'done' | 'merged';
  title: string;
}

/** Results offered at once: enough to pick from, few enough to read. */
const RESULTS = 8;
/** Typing pauses this long before a search goes out. */
const DEBOUNCE_MS = 150;

/**
 * The dialogs' "Depends on": search-as-you-type over Requirements (`GET /api/search`, the same
 * search as the header's), each pick added with its condition (until done, until merged) and
 * removable. The server checks cycles and unknown ids; this only keeps the list free of repeats,
 * of the Requirement itself and of cancelled ones (nothing would ever meet them).
 */
@Component({
  selector: 'am-depends-on-picker',
  changeDetection: ChangeDetectionStrategy.OnPush,
  styles: `
    :host {
      display: flex;
      flex-direction: column;
      gap: 0.35rem;
      position: relative;
    }
    .dependency {
      display: flex;
      align-items: center;
      gap: 0.4rem;
      flex-wrap: wrap;
      border: 1px solid var(--am-border);
      border-radius: 6px;
      padding: 0.2rem 0.35rem;
    }
    .dependency .name {
      flex: 1 1 8rem;
      min-width: 0;
      overflow-wrap: anywhere;
    }
    .results {
      list-style: none;
      margin: 0;
      padding: 0.2rem;
      border: 1px solid var(--am-border);
      border-radius: 6px;
      background: var(--am-surface);
      max-height: 14rem;
      overflow: auto;
    }
    .results button {
      width: 100%;
      text-align: left;
      border: 0;
      background: transparent;
      overflow-wrap: anywhere;
    }
    .results button:hover,
    .results button:focus-visible {
      background: var(--am-surface-2);
    }
  `,
  template: `
    <label>
      {{ t('deps.label') }}
      <input
        type="search"
        autocomplete="off"
        [placeholder]="t('deps.search')"
        [value]="query()"
        (input)="onType(value($event))"
        (keydown.enter)="onEnter($event)"
        [disabled]="chosen().length >= max"
        data-testid="depends-on-search"
      />
    </label>
    @if (query().trim() && searched()) {
      @if (hits().length > 0) {
        <ul class="results" role="listbox" [attr.aria-label]="t('deps.label')" data-testid="depends-on-results">
          @for (hit of hits(); track hit.requirementId) {
            <li role="option" aria-selected="false">
              <button
                type="button"
                (click)="add(hit)"
                data-testid="depends-on-result"
                [attr.data-requirement-id]="hit.requirementId"
              >
                {{ hit.requirementTitle }}
              </button>
            </li>
          }
        </ul>
      } @else {
        <span class="muted" data-testid="depends-on-none">{{ t('deps.none') }}</span>
      }
    }
    @for (d of chosen(); track d.requirementId) {
      <div class="dependency" data-testid="depends-on-item" [attr.data-requirement-id]="d.requirementId">
        <span class="name">{{ d.title }}</span>
        <select
          [attr.aria-label]="t('deps.condition', { s: d.title })"
          (change)="setUntil(d.requirementId, value($event))"
          data-testid="depends-on-until"
        >
          <option value="done" [selected]="d.until === 'done'">{{ t('deps.until.done') }}</option>
          <option value="merged" [selected]="d.until === 'merged'">{{ t('deps.until.merged') }}</option>
        </select>
        <button
          type="button"
          class="ghost small"
          (click)="remove(d.requirementId)"
          [attr.aria-label]="t('deps.remove', { s: d.title })"
          data-testid="depends-on-remove"
        >
          ✕
        </button>
      </div>
    }
  `,
})
export class DependsOnPicker {
  /** The Requirement edited (never its own dependency); null when creating. */
  readonly selfId = input<string | null>(null);
  readonly chosen = model<ChosenDependency[]>([]);
  private readonly api = inject(Api);
  protected readonly t = inject(I18n).t;
  protected readonly max = LIMITS.dependencies;
  protected readonly query = signal('');
  protected readonly hits = signal<SearchHit[]>([]);
  protected readonly searched = signal(false);
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Only the newest search's answer is shown (an older one may arrive last). */
  private asked = 0;

  protected value(event: Event): string {
    return (event.target as HTMLInputElement).value;
  }

  protected onType(q: string): void {
    this.query.set(q);
    this.searched.set(false);
    clearTimeout(this.timer);
    if (q.trim()) {
      this.timer = setTimeout(() => void this.search(q.trim()), DEBOUNCE_MS);
    } else {
      this.hits.set([]);
    }
  }

  /** Enter picks the first result instead of submitting the dialog's form. */
  protected onEnter(event: Event): void {
    event.preventDefault();
    const first = this.hits()[0];
    if (first && this.searched()) {
      this.add(first);
    }
  }

  protected add(hit: SearchHit): void {
    if (!this.chosen().some((d) => d.requirementId === hit.requirementId) && this.chosen().length < this.max) {
      this.chosen.update((list) => [
        ...list,
        { requirementId: hit.requirementId, title: hit.requirementTitle, until: 'done' },
      ]);
    }
    this.query.set('');
    this.hits.set([]);
    this.searched.set(false);
  }

  protected setUntil(id: string, until: string): void {
    this.chosen.update((list) =>
      list.map((d) => (d.requirementId === id ? { ...d, until: until === 'merged' ? 'merged' : 'done' } : d)),
    );
  }

  protected remove(id: string): void {
    this.chosen.update((list) => list.filter((d) => d.requirementId !== id));
  }

  private async search(q: string): Promise<void> {
    const ticket = ++this.asked;
    let items: SearchHit[] = [];
    try {
      // Hits are per message too: ask for more than shown, one per Requirement survives.
      items = (
        await this.api.call(this.api.client.GET('/api/search', { params: { query: { limit: RESULTS * 4, q } } }), true)
      ).items;
    } catch {
      // A refused query (too many words) shows as no match; the box stays usable.
    }
    if (ticket !== this.asked) {
      return;
    }
    const taken = new Set([...this.chosen().map((d) => d.requirementId), this.selfId()]);
    const seen = new Set<string>();
    this.hits.set(
      items
        .filter(
          (hit) =>
            hit.requirementStatus !== 'cancelled' &&
            !taken.has(hit.requirementId) &&
            !seen.has(hit.requirementId) &&
            seen.add(hit.requirementId),
        )
        .slice(0, RESULTS),
    );
    this.searched.set(true);
  }
}
