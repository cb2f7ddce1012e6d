import { Injectable, computed, inject, signal } from '@angular/core';

import { Api } from '../core/api';
import type { ChangedFile, Checkpoint, RequirementChanges, ReviewComment } from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';
import { DiffLine, FileDiff, LineSide, lineKey, lineSide, parseFileDiff } from './diff-model';

/** What the diff shows: every change of the Requirement, or what one run changed. */
export interface ReviewRange {
  label: { key: 'reviewView.allChanges' } | { key: 'reviewView.run'; n: number };
  from: string | null;
  to: string | null;
  /** The run's start checkpoint: "Rewind to here" goes back to it. */
  startId: string | null;
}

/** The lines a comment is being written on. */
export interface CommentTarget {
  path: string;
  side: LineSide;
  line: number;
  endLine: number;
  excerpt: string;
}

/**
 * The review view's state (issue 46 §7), one per view: the run ranges from the Requirement's
 * checkpoints, the changed files of the range, the open file's rows, the person's viewed marks
 * and every review comment. The components render it; the keyboard and the mouse move it.
 */
@Injectable()
export class ReviewState {
  private readonly api = inject(Api);
  private readonly requirements = inject(RequirementsStore);

  readonly requirementId = signal('');
  readonly checkpoints = signal<Checkpoint[]>([]);
  /** The run shown, by its start checkpoint (null: all changes): runs added later move no selection. */
  readonly rangeKey = signal<string | null>(null);
  readonly changes = signal<RequirementChanges | null>(null);
  readonly error = signal<string | null>(null);
  readonly fileIndex = signal(0);
  readonly diff = signal<FileDiff | null>(null);
  readonly viewed = signal<ReadonlyMap<string, boolean>>(new Map());
  readonly comments = signal<ReviewComment[]>([]);
  readonly layout = signal<'unified' | 'split'>(
    (globalThis.localStorage?.getItem('am.review.layout') as 'unified' | 'split' | null) ?? 'unified',
  );
  /** The focused row's key (`new:12`), and where a shift-selection started. */
  readonly focusKey = signal<string | null>(null);
  readonly anchorKey = signal<string | null>(null);
  readonly target = signal<CommentTarget | null>(null);
  readonly formError = signal<string | null>(null);

  readonly ranges = computed<ReviewRange[]>(() => {
    const runs: ReviewRange[] = [];
    const starts = this.checkpoints().filter((c) => c.kind === 'run_start' && c.runId !== null);
    starts.forEach((start, k) => {
      const end = this.checkpoints().find((c) => c.kind === 'run_end' && c.runId === start.runId);
      runs.push({ from: start.id, label: { key: 'reviewView.run', n: k + 1 }, startId: start.id, to: end?.id ?? null });
    });
    return [{ from: null, label: { key: 'reviewView.allChanges' }, startId: null, to: null }, ...runs.reverse()];
  });
  readonly range = computed(() => this.ranges().find((r) => r.startId === this.rangeKey()) ?? this.ranges()[0]);
  /**
   * Whether lines can take comments here: only on all changes, whose line numbers are the
   * agent's work as it is now (what a comment's anchor is); a run's own diff numbers another version.
   */
  readonly commentable = computed(() => this.range().from === null);
  readonly files = computed<ChangedFile[]>(() => this.changes()?.files ?? []);
  readonly file = computed<ChangedFile | null>(() => this.files()[this.fileIndex()] ?? null);
  readonly drafts = computed(() => this.comments().filter((c) => c.state === 'draft'));
  /** The open file's rows in order: what `j` and `k` move through. */
  readonly rows = computed<DiffLine[]>(() => this.diff()?.hunks.flatMap((h) => h.lines) ?? []);
  /** The rows between the anchor and the focus, on the anchor's side. */
  readonly selection = computed<ReadonlySet<string>>(() => {
    const rows = this.rows();
    const focus = rows.findIndex((r) => lineKey(r) === this.focusKey());
    const anchor = rows.findIndex((r) => lineKey(r) === (this.anchorKey() ?? this.focusKey()));
    if (focus < 0 || anchor < 0) {
      return new Set();
    }
    const side = lineSide(rows[anchor]).side;
    const picked = rows.slice(Math.min(focus, anchor), Math.max(focus, anchor) + 1);
    return new Set(picked.filter((r) => lineSide(r).side === side).map(lineKey));
  });
  /** Whether the selection is shown: a range being taken, or a comment being written on it. */
  readonly ranging = computed(() => this.anchorKey() !== null || this.target() !== null);
  readonly viewedCount = computed(() => this.files().filter((f) => this.viewed().get(f.path)).length);

  async load(id: string): Promise<void> {
    this.requirementId.set(id);
    const [checkpoints] = await Promise.all([
      this.api.client.GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } }),
      this.loadComments(),
      this.loadViewed(),
    ]);
    this.checkpoints.set(checkpoints.data?.items ?? []);
    await this.loadChanges();
  }

  /** The agent's work was imported again: everything but the place in it read anew. */
  async refresh(): Promise<void> {
    const [checkpoints] = await Promise.all([
      this.api.client.GET('/api/requirements/{id}/checkpoints', { params: { path: { id: this.requirementId() } } }),
      this.loadComments(),
      this.loadViewed(),
    ]);
    this.checkpoints.set(checkpoints.data?.items ?? []);
    // Asked after the reads: a comment begun meanwhile keeps its lines (the next import reads them anew).
    if (this.target() !== null || this.anchorKey() !== null) {
      return;
    }
    const focus = this.focusKey();
    await this.loadChanges(true);
    if (this.rows().some((r) => lineKey(r) === focus)) {
      this.focusKey.set(focus);
    }
  }

  async selectRange(key: string | null): Promise<void> {
    this.rangeKey.set(key);
    this.fileIndex.set(0);
    await this.loadChanges();
  }

  /**
   * The range's files, and one of them opened: with `keep`, the file open when the answer comes
   * (the person may have opened another meanwhile) when it is still there; else the same place in
   * the list.
   */
  async loadChanges(keep = false): Promise<void> {
    // Only the newest read is shown: a quicker answer to an older one (another range) is dropped.
    const ticket = ++this.tickets;
    const { from, to } = this.range();
    const { data, response } = await this.api.client.GET('/api/requirements/{id}/changes', {
      params: { path: { id: this.requirementId() }, query: { ...(from ? { from } : {}), ...(to ? { to } : {}) } },
    });
    if (ticket !== this.tickets) {
      return;
    }
    if (!response.ok || !data) {
      this.changes.set(null);
      this.diff.set(null);
      this.error.set(String(response.status));
      return;
    }
    this.error.set(null);
    const path = keep ? this.file()?.path : undefined;
    this.changes.set(data);
    const same = path === undefined ? -1 : data.files.findIndex((f) => f.path === path);
    await this.openFile(same >= 0 ? same : Math.min(this.fileIndex(), Math.max(0, data.files.length - 1)));
  }

  async openFile(index: number): Promise<void> {
    const file = this.files()[index];
    this.fileIndex.set(index);
    this.target.set(null);
    this.focusKey.set(null);
    this.anchorKey.set(null);
    if (!file) {
      this.diff.set(null);
      return;
    }
    const { from, to } = this.range();
    const { data } = await this.api.client.GET('/api/requirements/{id}/changes/diff', {
      params: {
        path: { id: this.requirementId() },
        query: {
          path: file.path,
          ...(file.oldPath ? { oldPath: file.oldPath } : {}),
          ...(from ? { from } : {}),
          ...(to ? { to } : {}),
        },
      },
      parseAs: 'text',
    });
    if (this.file() === file) {
      this.diff.set(parseFileDiff(typeof data === 'string' ? data : ''));
      this.focusKey.set(this.rows()[0] ? lineKey(this.rows()[0]) : null);
    }
  }

  /** `j`/`k` (with shift: extending the selection). */
  moveLine(delta: number, extend: boolean): void {
    const rows = this.rows();
    if (rows.length === 0) {
      return;
    }
    const at = rows.findIndex((r) => lineKey(r) === this.focusKey());
    const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + delta))];
    this.focus(lineKey(next), extend);
  }

  focus(key: string, extend: boolean): void {
    if (extend) {
      this.anchorKey.update((anchor) => anchor ?? this.focusKey());
    } else {
      this.anchorKey.set(null);
    }
    this.focusKey.set(key);
  }

  /** `c`: a comment on the selected lines (on one side: a range never mixes before and after). */
  startComment(): void {
    if (!this.commentable()) {
      return; // the view says why (reviewView.runNoComments)
    }
    const file = this.file();
    const picked = this.rows().filter((r) => this.selection().has(lineKey(r)));
    if (!file || picked.length === 0) {
      return;
    }
    const side = lineSide(picked[0]).side;
    const numbers = picked.map((r) => lineSide(r).line);
    this.formError.set(null);
    this.target.set({
      endLine: Math.max(...numbers),
      excerpt: picked.map((r) => r.text).join('\n'),
      line: Math.min(...numbers),
      path: side === 'old' ? (file.oldPath ?? file.path) : file.path,
      side,
    });
  }

  /** Saves the comment being written as a draft; false (with why) when it was not taken. */
  async saveDraft(text: string): Promise<boolean> {
    const target = this.target();
    if (!target) {
      return false;
    }
    if (!text.trim()) {
      this.formError.set('empty');
      return false;
    }
    try {
      await this.api.call(
        this.api.client.POST('/api/requirements/{id}/review-comments', {
          body: {
            body: text.trim(),
            line: target.line,
            path: target.path,
            side: target.side,
            ...(target.endLine !== target.line ? { endLine: target.endLine } : {}),
          },
          params: { path: { id: this.requirementId() } },
        }),
        true,
      );
    } catch (err) {
      this.formError.set(err instanceof Error ? err.message : String(err));
      return false;
    }
    this.target.set(null);
    this.anchorKey.set(null);
    await this.loadComments();
    return true;
  }

  async deleteDraft(comment: ReviewComment): Promise<void> {
    await this.api.call(
      this.api.client.DELETE('/api/requirements/{id}/review-comments/{commentId}', {
        params: { path: { commentId: comment.id, id: this.requirementId() } },
      }),
    );
    await this.loadComments();
  }

  async toggleResolved(comment: ReviewComment): Promise<void> {
    await this.api.call(
      this.api.client.PATCH('/api/requirements/{id}/review-comments/{commentId}', {
        body: { state: comment.state === 'resolved' ? 'open' : 'resolved' },
        params: { path: { commentId: comment.id, id: this.requirementId() } },
      }),
    );
    await this.loadComments();
  }

  /** Every draft as one message to the agent, with the overall comment. */
  async sendReview(body: string): Promise<boolean> {
    try {
      const sent = await this.api.call(
        this.api.client.POST('/api/requirements/{id}/reviews', {
          body: body.trim() ? { body: body.trim() } : {},
          params: { path: { id: this.requirementId() } },
        }),
      );
      this.requirements.accept(sent.requirement);
      return true;
    } catch {
      return false; // shown by the API service; the drafts stay
    } finally {
      await this.loadComments();
    }
  }

  /** `v`: the open file viewed, or not any more. */
  async toggleViewed(path = this.file()?.path): Promise<void> {
    if (!path) {
      return;
    }
    const viewed = !this.viewed().get(path);
    const data = await this.api.call(
      this.api.client.PUT('/api/requirements/{id}/viewed-files', {
        body: { path, viewed },
        params: { path: { id: this.requirementId() } },
      }),
    );
    this.viewed.set(new Map(data.items.map((f) => [f.path, f.viewed])));
  }

  setLayout(layout: 'unified' | 'split'): void {
    this.layout.set(layout);
    globalThis.localStorage?.setItem('am.review.layout', layout);
  }

  /** The files a rewind to `startId` discards: everything changed since that checkpoint. */
  async changedSince(startId: string): Promise<string[]> {
    const data = await this.api.call(
      this.api.client.GET('/api/requirements/{id}/changes', {
        params: { path: { id: this.requirementId() }, query: { from: startId } },
      }),
    );
    return data.files.map((f) => f.path);
  }

  async rewind(checkpointId: string): Promise<void> {
    await this.api.call(
      this.api.client.POST('/api/requirements/{id}/rewind', {
        body: { checkpointId },
        params: { path: { id: this.requirementId() } },
      }),
    );
    this.rangeKey.set(null);
    await this.load(this.requirementId());
  }

  private tickets = 0;

  /** The threads read again (an event said they changed: an agent's answer, a resolution). */
  readComments(): Promise<void> {
    return this.loadComments();
  }

  /** The checkpoints read again (a run started or ended, a rewind): the run selector follows. */
  async readCheckpoints(): Promise<void> {
    const { data } = await this.api.client.GET('/api/requirements/{id}/checkpoints', {
      params: { path: { id: this.requirementId() } },
    });
    if (data) {
      this.checkpoints.set(data.items);
    }
  }

  private async loadComments(): Promise<void> {
    const { data } = await this.api.client.GET('/api/requirements/{id}/review-comments', {
      params: { path: { id: this.requirementId() } },
    });
    this.comments.set(data?.items ?? []);
  }

  private async loadViewed(): Promise<void> {
    const { data } = await this.api.client.GET('/api/requirements/{id}/viewed-files', {
      params: { path: { id: this.requirementId() } },
    });
    this.viewed.set(new Map((data?.items ?? []).map((f) => [f.path, f.viewed])));
  }
}
