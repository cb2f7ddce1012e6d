import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  computed,
  effect,
  inject,
  input,
  signal,
  untracked,
  viewChild,
} from '@angular/core';
import { takeUntilDestroyed } from '@angular/core/rxjs-interop';
import { RouterLink } from '@angular/router';

import { EventStream } from '../core/event-stream';

import { I18n, keyOf } from '../core/i18n';
import { RequirementsStore } from '../core/stores/requirements-store';
import { ReviewDiff } from './review-diff';
import { ReviewRange, ReviewState } from './review-state';

/** Keys typed into these are text, not commands. */
const TYPING = new Set(['INPUT', 'TEXTAREA', 'SELECT']);

/**
 * The review view of one Requirement (issue 46 §7), full width at /requirements/:id/review: the
 * changed files with their viewed marks and comment counts, one file's diff (unified or split),
 * what one run changed (the run selector, from the checkpoints) and "Rewind to here", the drafts
 * and "Send review (n)". Everything works from the keyboard: `j`/`k` lines (with shift: a range),
 * `n`/`p` files, `c` comment, `v` viewed, `r` the overall comment; Ctrl+Enter saves a draft or
 * sends the review, Escape closes.
 */
@Component({
  selector: 'am-review-view',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ReviewDiff, RouterLink],
  providers: [ReviewState],
  templateUrl: './review-view.html',
  styleUrl: './review-view.css',
  host: { '(document:keydown)': 'onKey($event)' },
})
export class ReviewView {
  /** The route's `:id` (component input binding). */
  readonly id = input.required<string>();
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  protected readonly state = inject(ReviewState);
  private readonly requirements = inject(RequirementsStore);
  private readonly overallInput = viewChild<ElementRef<HTMLInputElement>>('overallInput');

  protected readonly overall = signal('');
  protected readonly sending = signal(false);
  /** A rewind being confirmed: the run it was asked on (named in the heading), and what it discards. */
  protected readonly rewinding = signal<{ checkpointId: string; range: ReviewRange; files: string[] } | null>(null);
  protected readonly title = computed(() => this.requirements.requirements().get(this.id())?.title ?? '');
  /** Comments per path (drafts and open threads), for the file tree. */
  protected readonly commentCount = computed(() => {
    const counts = new Map<string, number>();
    for (const c of this.state.comments()) {
      if (c.state !== 'resolved') {
        counts.set(c.path, (counts.get(c.path) ?? 0) + 1);
      }
    }
    return counts;
  });

  /** What the lists were read for: the agent's work as last imported (live, through the store). */
  private readVersion = '';

  constructor() {
    // Live: the agent's answers and resolutions, and new checkpoints (a run's start or end, a
    // rewind), read again as their events arrive for this Requirement.
    inject(EventStream)
      .events$.pipe(takeUntilDestroyed())
      .subscribe((event) => {
        if (event === 'resync' || event.requirementId !== this.id()) {
          return;
        }
        if (event.type === 'review_comments.updated' || event.type === 'review_comment.deleted') {
          void this.state.readComments();
        } else if (event.type === 'checkpoint.created') {
          void this.state.readCheckpoints();
        }
      });
    effect(() => {
      const id = this.id();
      const worktree = this.requirements.requirements().get(id)?.worktree;
      const version = `${id}:${worktree?.workSha ?? ''}:${worktree?.refreshedAt ?? ''}`;
      untracked(() => {
        if (version === this.readVersion) {
          return;
        }
        const same = this.readVersion.startsWith(`${id}:`);
        this.readVersion = version;
        if (same) {
          // The agent's work was imported again: the files, the open diff and the threads (re-anchored) anew.
          void this.state.refresh();
          return;
        }
        void this.state.load(id);
        if (!worktree) {
          void this.requirements.read(id).catch(() => undefined);
        }
      });
    });
  }

  protected rangeLabel(range: ReviewRange): string {
    return range.label.key === 'reviewView.run'
      ? this.t('reviewView.run', { n: range.label.n })
      : this.t('reviewView.allChanges');
  }

  protected selectRange(value: string): void {
    this.rewinding.set(null);
    void this.state.selectRange(value === '' ? null : value);
  }

  protected open(index: number): void {
    void this.state.openFile(index);
  }

  protected async askRewind(checkpointId: string, range: ReviewRange): Promise<void> {
    this.rewinding.set({ checkpointId, files: await this.state.changedSince(checkpointId), range });
  }

  protected async rewind(checkpointId: string): Promise<void> {
    this.rewinding.set(null);
    await this.state.rewind(checkpointId).catch(() => undefined); // the API service shows why
  }

  protected async send(): Promise<void> {
    if (this.sending() || this.state.drafts().length === 0) {
      return;
    }
    this.sending.set(true);
    if (await this.state.sendReview(this.overall())) {
      this.overall.set('');
    }
    this.sending.set(false);
  }

  protected onKey(event: KeyboardEvent): void {
    const target = event.target as HTMLElement | null;
    if (
      event.altKey ||
      event.ctrlKey ||
      event.metaKey ||
      (target && (TYPING.has(target.tagName) || target.isContentEditable))
    ) {
      return;
    }
    const files = this.state.files().length;
    switch (event.key) {
      case 'j':
      case 'J':
      case 'ArrowDown':
        this.state.moveLine(1, event.shiftKey);
        break;
      case 'k':
      case 'K':
      case 'ArrowUp':
        this.state.moveLine(-1, event.shiftKey);
        break;
      case 'n':
        if (this.state.fileIndex() < files - 1) {
          void this.state.openFile(this.state.fileIndex() + 1);
        }
        break;
      case 'p':
        if (this.state.fileIndex() > 0) {
          void this.state.openFile(this.state.fileIndex() - 1);
        }
        break;
      case 'c':
        this.state.startComment();
        break;
      case 'v':
        void this.state.toggleViewed();
        break;
      case 'r':
        // The overall comment, where Ctrl+Enter sends the review.
        this.overallInput()?.nativeElement.focus();
        break;
      case 'Escape':
        this.state.target.set(null);
        this.state.anchorKey.set(null);
        break;
      default:
        return;
    }
    event.preventDefault();
  }
}
