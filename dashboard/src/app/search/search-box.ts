import { ChangeDetectionStrategy, Component, ElementRef, inject, signal, viewChild } from '@angular/core';
import { Router } from '@angular/router';

import { Api } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import type { SearchHit } from '../core/api-types';

/** Typing pauses this long before a search goes out (one request per pause, not per key). */
const DEBOUNCE_MS = 150;
const RESULTS = 8;

/**
 * The search box of every page: titles, descriptions and every message, best match first
 * (`GET /api/search`). Arrow keys move through the results, Enter opens one: the Requirement,
 * scrolled to the message that matched. Snippets are text with marked parts, never HTML.
 */
@Component({
  selector: 'am-search-box',
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { class: 'search-box', '(focusout)': 'onFocusOut($event)' },
  template: `
    <label class="sr-only" for="am-search">{{ t('search.label') }}</label>
    <input
      #box
      id="am-search"
      type="search"
      role="combobox"
      autocomplete="off"
      maxlength="200"
      data-testid="search"
      [placeholder]="t('search.placeholder')"
      [attr.aria-expanded]="open()"
      aria-controls="am-search-results"
      [attr.aria-activedescendant]="open() && active() >= 0 ? 'am-search-' + active() : null"
      (input)="onInput(box.value)"
      (keydown)="onKey($event)"
      (focus)="open.set(hits().length > 0 || searched())"
    />
    @if (open()) {
      <ul
        class="search-results"
        id="am-search-results"
        role="listbox"
        [attr.aria-label]="t('search.results')"
        data-testid="search-results"
        [attr.data-query]="answered()"
      >
        @for (hit of hits(); track $index) {
          <li
            role="option"
            [id]="'am-search-' + $index"
            [attr.aria-selected]="$index === active()"
            [class.active]="$index === active()"
            (mousedown)="$event.preventDefault()"
            (click)="openHit(hit)"
            data-testid="search-hit"
          >
            <div class="hit-title">
              <span class="badge">{{ t(keyOf('req', hit.requirementStatus)) }}</span>
              <strong>{{ hit.requirementTitle }}</strong>
              @if (hit.sequence !== null) {
                <span class="muted">#{{ hit.sequence }}</span>
              }
            </div>
            <div class="hit-snippet">
              @for (part of hit.snippet; track $index) {
                @if (part.match) {
                  <mark>{{ part.text }}</mark>
                } @else {
                  <span>{{ part.text }}</span>
                }
              }
            </div>
          </li>
        } @empty {
          <li class="muted" role="presentation" data-testid="search-empty">{{ t('search.none') }}</li>
        }
      </ul>
    }
  `,
})
export class SearchBox {
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  private readonly api = inject(Api);
  private readonly router = inject(Router);
  private readonly box = viewChild.required<ElementRef<HTMLInputElement>>('box');

  protected readonly hits = signal<SearchHit[]>([]);
  protected readonly open = signal(false);
  protected readonly searched = signal(false);
  protected readonly active = signal(-1);
  /** The query the shown hits answer (typing sends several; only the newest one's answer is shown). */
  protected readonly answered = signal('');
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Answers that arrive after a newer query went out are dropped. */
  private asked = 0;

  protected onInput(text: string): void {
    clearTimeout(this.timer);
    const q = text.trim();
    if (!/[\p{L}\p{N}]/u.test(q)) {
      this.hits.set([]);
      this.searched.set(false);
      this.open.set(false);
      return;
    }
    this.timer = setTimeout(() => void this.search(q), DEBOUNCE_MS);
  }

  protected onKey(event: KeyboardEvent): void {
    const count = this.hits().length;
    switch (event.key) {
      case 'ArrowDown':
        event.preventDefault();
        this.open.set(true);
        this.active.set(count === 0 ? -1 : (this.active() + 1) % count);
        break;
      case 'ArrowUp':
        event.preventDefault();
        this.active.set(count === 0 ? -1 : (this.active() - 1 + count) % count);
        break;
      case 'Enter': {
        const hit = this.hits()[this.active() >= 0 ? this.active() : 0];
        if (hit) {
          event.preventDefault();
          this.openHit(hit);
        }
        break;
      }
      case 'Escape':
        if (this.open()) {
          event.preventDefault();
          this.open.set(false);
        }
        break;
      default:
        break;
    }
  }

  protected onFocusOut(event: FocusEvent): void {
    if (!(event.relatedTarget instanceof Node && (event.currentTarget as HTMLElement).contains(event.relatedTarget))) {
      this.open.set(false);
    }
  }

  protected openHit(hit: SearchHit): void {
    this.open.set(false);
    this.box().nativeElement.blur();
    void this.router.navigate(['/requirements', hit.requirementId], {
      queryParams: hit.sequence === null ? {} : { message: hit.sequence },
    });
  }

  private async search(q: string): Promise<void> {
    const ticket = ++this.asked;
    try {
      const page = await this.api.call(
        this.api.client.GET('/api/search', { params: { query: { limit: RESULTS, q } } }),
        true,
      );
      if (ticket === this.asked) {
        this.hits.set(page.items);
        this.answered.set(q);
        this.active.set(page.items.length > 0 ? 0 : -1);
        this.searched.set(true);
        this.open.set(document.activeElement === this.box().nativeElement);
      }
    } catch {
      // A refused query (too many words) shows as no results; the box stays usable.
      if (ticket === this.asked) {
        this.hits.set([]);
        this.answered.set(q);
        this.searched.set(true);
      }
    }
  }
}
