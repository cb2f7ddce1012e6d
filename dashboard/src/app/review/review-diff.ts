import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  afterRenderEffect,
  computed,
  inject,
  viewChild,
} from '@angular/core';

import { NgTemplateOutlet } from '@angular/common';

import { I18n } from '../core/i18n';
import type { ReviewComment } from '../core/api-types';
import { DiffLine, SplitRow, lineKey, lineSide, splitRows } from './diff-model';
import { ReviewState } from './review-state';
import { ReviewThread } from './review-thread';

/**
 * The open file's diff, rendered row by row (not diff2html): every line a focusable row whose
 * number and text have at least 4.5:1 contrast in both themes; the focused row and the selected
 * range marked; each thread under the line it ends on, its outdated ones folded above the diff;
 * the comment form under the selection. `j`/`k` move the focus (ReviewView), a click focuses,
 * shift-click or a drag extends the range.
 */
@Component({
  selector: 'am-review-diff',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [NgTemplateOutlet, ReviewThread],
  templateUrl: './review-diff.html',
  styleUrl: './review-diff.css',
})
export class ReviewDiff {
  protected readonly t = inject(I18n).t;
  protected readonly state = inject(ReviewState);
  protected readonly lineKey = lineKey;
  private readonly box = viewChild<ElementRef<HTMLElement>>('box');
  private readonly text = viewChild<ElementRef<HTMLTextAreaElement>>('commentText');

  protected readonly hunks = computed(() =>
    (this.state.diff()?.hunks ?? []).map((h) => ({ header: h.header, lines: h.lines, split: splitRows(h) })),
  );
  /** The file's threads still on their lines, by the key of the row they end on. */
  protected readonly threads = computed(() => {
    const file = this.state.file();
    const byKey = new Map<string, ReviewComment[]>();
    // On all changes only: a run's own diff numbers its lines in another version.
    for (const c of this.state.commentable() ? this.state.comments() : []) {
      if (!file || c.outdated || !this.onFile(c)) {
        continue;
      }
      const key = `${c.side}:${c.endLine}`;
      byKey.set(key, [...(byKey.get(key) ?? []), c]);
    }
    return byKey;
  });
  protected readonly outdated = computed(() =>
    this.state.commentable() ? this.state.comments().filter((c) => c.outdated && this.onFile(c)) : [],
  );
  /** The row the comment form opens under: the last of the selection. */
  protected readonly formKey = computed(() => {
    const target = this.state.target();
    return target ? `${target.side}:${target.endLine}` : null;
  });

  constructor() {
    // The focused row takes the browser's focus (and scrolls into view); the form its textarea.
    afterRenderEffect(() => {
      const key = this.state.focusKey();
      const formOpen = this.state.target() !== null;
      if (formOpen) {
        this.text()?.nativeElement.focus();
        return;
      }
      const box = this.box()?.nativeElement;
      const row = key ? box?.querySelector<HTMLElement>(`[data-key="${key}"]`) : null;
      // Not taken from a control the person is in (the file list, the overall comment).
      const active = document.activeElement;
      const free = active === null || active === document.body || !!box?.contains(active);
      if (row && active !== row && free) {
        row.focus({ preventScroll: true });
        row.scrollIntoView({ block: 'nearest' });
      }
    });
  }

  protected sideOf(line: DiffLine): 'new' | 'old' {
    return lineSide(line).side;
  }

  protected pointerDown(event: MouseEvent, line: DiffLine): void {
    if (event.button !== 0) {
      return;
    }
    this.dragging = true;
    this.state.focus(lineKey(line), event.shiftKey);
  }

  protected pointerEnter(event: MouseEvent, line: DiffLine): void {
    if (this.dragging && event.buttons === 1) {
      this.state.focus(lineKey(line), true);
    } else {
      this.dragging = false;
    }
  }

  protected pointerUp(): void {
    this.dragging = false;
  }

  protected async save(text: string): Promise<void> {
    await this.state.saveDraft(text);
  }

  protected cancel(): void {
    this.state.target.set(null);
  }

  protected rowsOf(row: SplitRow): DiffLine[] {
    return [row.left, row.right].filter((l): l is DiffLine => l !== null);
  }

  private dragging = false;

  private onFile(c: ReviewComment): boolean {
    const file = this.state.file();
    return !!file && (c.path === file.path || (c.side === 'old' && c.path === file.oldPath));
  }
}
