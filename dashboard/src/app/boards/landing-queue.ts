import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  Injector,
  afterNextRender,
  effect,
  inject,
  signal,
} from '@angular/core';
import { RouterLink } from '@angular/router';

import { I18n, keyOf } from '../core/i18n';
import { fileList } from '../core/landing';
import type { LandingQueueItem } from '../core/api-types';
import { LandingStore } from '../core/stores/landing-store';
import { RequirementsStore } from '../core/stores/requirements-store';

/** Where a drop would put the dragged item: before the item at this index (the length: at the end). */
type DropIndex = number | null;

/**
 * The merge queue on the board (issue 28 §3): what lands next, in order, with each one's state
 * (a paused one with its reason and files). Reordered by dragging (native drag and drop, which
 * needs no library) or, from the keyboard and on a touch screen, by the arrows; every order change
 * is one PUT of the whole queue, shown at once. Live through `landing.queue.updated`.
 */
@Component({
  selector: 'am-landing-queue',
  imports: [RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { '(document:pointerdown)': 'onPointerDown($event)' },
  styles: `
    :host {
      display: block;
      margin-bottom: 0.75rem;
    }
    .section-head {
      flex-wrap: wrap;
      justify-content: flex-start;
    }
    .queue-hint {
      font-size: 0.85em;
    }
    .queue-items {
      list-style: none;
      margin: 0;
      padding: 0;
      display: flex;
      flex-direction: column;
      gap: 0.3rem;
    }
    .queue-item {
      border: 1px solid var(--am-border);
      border-radius: 6px;
      padding: 0.25rem 0.4rem;
      background: var(--am-surface);
      cursor: grab;
    }
    .queue-item.dragging {
      opacity: 0.5;
    }
    .queue-item.drop-before {
      box-shadow: 0 -3px 0 var(--am-accent);
    }
    .queue-item.drop-after {
      box-shadow: 0 3px 0 var(--am-accent);
    }
    .queue-row {
      display: flex;
      align-items: center;
      gap: 0.4rem;
      min-width: 0;
    }
    .grip {
      color: var(--am-muted);
    }
    .queue-pos {
      font-weight: 600;
      min-width: 1.2em;
      text-align: right;
    }
    .queue-title {
      flex: 1 1 auto;
      min-width: 0;
      overflow: hidden;
      text-overflow: ellipsis;
      white-space: nowrap;
    }
    .queue-buttons {
      display: inline-flex;
      flex-shrink: 0;
    }
    .queue-reason {
      margin: 0.2rem 0 0 2.2rem;
      font-size: 0.85em;
      color: var(--am-warn);
      overflow-wrap: anywhere;
    }
    .queue-files {
      font-family: ui-monospace, monospace;
      margin-left: 0.3rem;
    }
    @media (max-width: 640px) {
      .queue-row {
        flex-wrap: wrap;
      }
      .queue-title {
        flex-basis: calc(100% - 4rem);
      }
      .queue-buttons {
        margin-left: auto;
      }
      /* A finger's size: on a phone the arrows are the only way to reorder. */
      .queue-buttons button {
        padding: 0.3rem 0.65rem;
      }
      .queue-reason {
        margin-left: 0;
      }
    }
  `,
  template: `
    @if (store.queue().length > 0) {
      <section class="panel landing-queue" aria-labelledby="landing-queue-title" data-testid="landing-queue">
        <div class="section-head">
          <h2 id="landing-queue-title">
            {{ t('queue.title') }}
            <span class="badge" data-testid="landing-queue-count">{{ store.queue().length }}</span>
          </h2>
          <span class="muted queue-hint">{{ t('queue.hint') }}</span>
        </div>
        <ol class="queue-items" (dragleave)="onDragLeave($event)" (focusout)="onFocusOut($event)">
          @for (item of store.queue(); track item.requirementId; let i = $index, first = $first, last = $last) {
            <li
              class="queue-item"
              draggable="true"
              data-testid="queue-item"
              [attr.data-requirement-id]="item.requirementId"
              [attr.data-state]="item.state"
              [class.dragging]="dragged() === item.requirementId"
              [class.drop-before]="dropAt() === i && dragged() !== null"
              [class.drop-after]="last && dropAt() === i + 1 && dragged() !== null"
              (dragstart)="onDragStart($event, item)"
              (dragover)="onDragOver($event, i)"
              (drop)="onDrop($event)"
              (dragend)="onDragEnd()"
            >
              <div class="queue-row">
                <span class="grip" aria-hidden="true" [title]="t('queue.drag')">⠿</span>
                <span class="queue-pos" data-testid="queue-position">{{ i + 1 }}</span>
                <a
                  class="queue-title"
                  [routerLink]="['/requirements', item.requirementId]"
                  draggable="false"
                  [title]="titleOf(item)"
                  >{{ titleOf(item) }}</a
                >
                <span class="badge">{{ t(keyOf('land.method', item.method)) }}</span>
                <span
                  class="badge"
                  [class.accent]="item.state === 'landing'"
                  [class.warn]="item.state === 'paused'"
                  data-testid="queue-state"
                  >{{ t(keyOf('queue.state', item.state)) }}</span
                >
                <span class="queue-buttons">
                  <button
                    type="button"
                    class="ghost small"
                    [disabled]="first || busy()"
                    (click)="move(i, -1)"
                    [attr.aria-label]="t('queue.up', { title: titleOf(item) })"
                    [title]="t('queue.up', { title: titleOf(item) })"
                    data-testid="queue-up"
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    class="ghost small"
                    [disabled]="last || busy()"
                    (click)="move(i, 1)"
                    [attr.aria-label]="t('queue.down', { title: titleOf(item) })"
                    [title]="t('queue.down', { title: titleOf(item) })"
                    data-testid="queue-down"
                  >
                    ↓
                  </button>
                  <button
                    type="button"
                    class="ghost small"
                    [disabled]="busy()"
                    (click)="remove(item)"
                    [attr.aria-label]="t('queue.remove', { title: titleOf(item) })"
                    [title]="t('queue.remove', { title: titleOf(item) })"
                    data-testid="queue-remove"
                  >
                    ✕
                  </button>
                </span>
              </div>
              @if (item.state === 'paused' && (item.reason || item.conflictPaths.length > 0)) {
                <div class="queue-reason" data-testid="queue-reason">
                  {{ t('queue.waiting', { s: item.reason ?? '' }) }}
                  @if (idle(item)) {
                    <button
                      type="button"
                      class="small primary"
                      (click)="start(item)"
                      data-testid="queue-start"
                      [title]="t('queue.startHint')"
                    >
                      {{ t('queue.start', { title: titleOf(item) }) }}
                    </button>
                  }
                  @if (item.conflictPaths.length > 0) {
                    <span class="queue-files" data-testid="queue-files" [title]="item.conflictPaths.join(', ')">{{
                      fileList(item.conflictPaths)
                    }}</span>
                  }
                </div>
              }
            </li>
          }
        </ol>
        <p class="sr-only" aria-live="polite" data-testid="queue-announcement">{{ announcement() }}</p>
      </section>
    }
  `,
})
export class LandingQueuePanel {
  protected readonly store = inject(LandingStore);
  private readonly requirements = inject(RequirementsStore);
  private readonly host = inject<ElementRef<HTMLElement>>(ElementRef);
  private readonly injector = inject(Injector);
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  protected readonly fileList = fileList;
  protected readonly dragged = signal<string | null>(null);
  protected readonly dropAt = signal<DropIndex>(null);
  protected readonly busy = signal(false);
  /** Said to a screen reader after a move (the list's order changed under its focus). */
  protected readonly announcement = signal('');
  /**
   * The arrow a keyboard move left the focus on. Another order arriving on the stream (an older
   * move's event, a move made elsewhere) moves the rows, and a browser drops the focus of a moved
   * element; it is put back until the person takes the focus somewhere else.
   */
  private kept: { id: string; preferred: 'queue-up' | 'queue-down' } | null = null;

  constructor() {
    effect(() => {
      this.store.queue();
      if (this.kept !== null) {
        afterNextRender(() => this.restoreFocus(), { injector: this.injector });
      }
    });
  }

  /** The board's title when it has the Requirement (renamed since it was queued), else the queue's. */
  /**
   * A paused item whose agent is not at work (stopped, failed, over budget, or done with its
   * run): its rebase request waits for a start — the queue meanwhile lands the ones after it.
   */
  protected idle(item: LandingQueueItem): boolean {
    const r = this.requirements.requirements().get(item.requirementId);
    return r !== undefined && r.session.state !== 'running';
  }

  protected start(item: LandingQueueItem): void {
    void this.requirements.start(item.requirementId).catch(() => undefined);
  }

  protected titleOf(item: LandingQueueItem): string {
    return this.requirements.requirements().get(item.requirementId)?.title ?? item.title;
  }

  protected onDragStart(event: DragEvent, item: LandingQueueItem): void {
    this.dragged.set(item.requirementId);
    if (event.dataTransfer) {
      event.dataTransfer.effectAllowed = 'move';
      // Some browsers start no drag without data.
      event.dataTransfer.setData('text/plain', item.requirementId);
    }
  }

  /** Over an item: the drop goes before it in its upper half, after it in its lower half. */
  protected onDragOver(event: DragEvent, index: number): void {
    if (this.dragged() === null) {
      return; // something else dragged here (a file, a link): not ours
    }
    event.preventDefault();
    if (event.dataTransfer) {
      event.dataTransfer.dropEffect = 'move';
    }
    const box = (event.currentTarget as HTMLElement).getBoundingClientRect();
    this.dropAt.set(event.clientY > box.top + box.height / 2 ? index + 1 : index);
  }

  protected onDragLeave(event: DragEvent): void {
    const list = event.currentTarget as HTMLElement;
    if (!list.contains(event.relatedTarget as Node | null)) {
      this.dropAt.set(null);
    }
  }

  protected onDrop(event: DragEvent): void {
    event.preventDefault();
    const id = this.dragged();
    const at = this.dropAt();
    this.onDragEnd();
    if (id === null || at === null) {
      return;
    }
    const ids = this.store.queue().map((item) => item.requirementId);
    const from = ids.indexOf(id);
    if (from < 0) {
      return; // it left the queue while dragged (landed, removed)
    }
    ids.splice(from, 1);
    ids.splice(at > from ? at - 1 : at, 0, id);
    void this.reorder(ids, id, null);
  }

  protected onDragEnd(): void {
    this.dragged.set(null);
    this.dropAt.set(null);
  }

  /** One step up or down; focus stays on the moved item's arrow (the other one at either end). */
  protected move(index: number, step: -1 | 1): void {
    const ids = this.store.queue().map((item) => item.requirementId);
    const id = ids[index];
    const to = index + step;
    if (id === undefined || to < 0 || to >= ids.length) {
      return;
    }
    ids.splice(index, 1);
    ids.splice(to, 0, id);
    void this.reorder(ids, id, step < 0 ? 'queue-up' : 'queue-down');
  }

  protected async remove(item: LandingQueueItem): Promise<void> {
    this.busy.set(true);
    try {
      await this.store.dequeue(item.requirementId);
    } catch {
      // shown by the API service
    } finally {
      this.busy.set(false);
    }
  }

  private async reorder(ids: string[], movedId: string, focus: 'queue-up' | 'queue-down' | null): Promise<void> {
    const unchanged = ids.every((id, i) => this.store.queue()[i]?.requirementId === id);
    if (unchanged) {
      return;
    }
    const item = this.store.queue().find((i) => i.requirementId === movedId);
    const reordered = this.store.reorder(ids);
    if (item) {
      this.announcement.set(
        this.t('queue.moved', { n: ids.indexOf(movedId) + 1, title: this.titleOf(item), total: ids.length }),
      );
    }
    if (focus !== null) {
      this.kept = { id: movedId, preferred: focus };
      afterNextRender(() => this.refocus(movedId, focus), { injector: this.injector });
    }
    await reordered.catch(() => undefined); // shown by the API service; the queue is read again
  }

  /** Focus moved on to something else (not just dropped by a moved row): stop keeping it. */
  protected onFocusOut(event: FocusEvent): void {
    if (event.relatedTarget !== null) {
      this.kept = null;
    }
  }

  /** A click elsewhere on the page (which may focus nothing) is the person moving on too. */
  protected onPointerDown(event: PointerEvent): void {
    if (!this.host.nativeElement.contains(event.target as Node | null)) {
      this.kept = null;
    }
  }

  private restoreFocus(): void {
    const active = document.activeElement;
    if (this.kept !== null && (active === null || active === document.body)) {
      this.refocus(this.kept.id, this.kept.preferred);
    }
  }

  private refocus(id: string, preferred: 'queue-up' | 'queue-down'): void {
    const row = this.host.nativeElement.querySelector(`[data-requirement-id="${CSS.escape(id)}"]`);
    const other = preferred === 'queue-up' ? 'queue-down' : 'queue-up';
    const button =
      row?.querySelector<HTMLButtonElement>(`[data-testid="${preferred}"]:not(:disabled)`) ??
      row?.querySelector<HTMLButtonElement>(`[data-testid="${other}"]:not(:disabled)`);
    button?.focus();
  }
}
