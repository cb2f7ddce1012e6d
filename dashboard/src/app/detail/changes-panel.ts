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
import { DomSanitizer, type SafeHtml } from '@angular/platform-browser';
import { RouterLink } from '@angular/router';
import { html as diffHtml } from 'diff2html';
import type { ColorSchemeType } from 'diff2html/lib/types';
import DOMPurify from 'dompurify';

import { Api } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { Theme } from '../core/theme';
import { fileList } from '../core/landing';
import type { ChangedFile, Requirement, RequirementChanges } from '../core/api-types';
import { RequirementsStore } from '../core/stores/requirements-store';
import { ReviewDrafts } from './review-drafts';

/** Where a file conflicts, by the conflict radar: with the base, and with which other Requirements. */
interface FileConflict {
  base: boolean;
  with: Array<{ requirementId: string; title: string }>;
}

/** A line picked in a diff, to comment on. */
interface PickedLine {
  path: string;
  line: number;
  side: 'new' | 'old';
  code: string;
}

/**
 * The Changes tab: what the agent changed in its worktree against the merge base with its base
 * ref (committed, uncommitted and untracked), a file at a time, rendered by diff2html. Clicking a
 * line number picks that line; its comment becomes a draft of the person's review (ReviewDrafts),
 * sent to the agent with the others as one message. The diff is the agent's text: diff2html
 * escapes it, DOMPurify removes anything active, and only then is it marked safe.
 */
@Component({
  selector: 'am-changes-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ReviewDrafts, RouterLink],
  template: `
    <section class="changes" data-testid="changes">
      @if (error()) {
        <p class="muted" data-testid="changes-unavailable">{{ error() }}</p>
      } @else if (changes(); as c) {
        <div class="row changes-head">
          <span class="muted" data-testid="changes-summary">{{
            c.files.length === 1
              ? t('changes.summaryOne', { base: c.baseRef, sha: c.mergeBaseSha.slice(0, 8) })
              : t('changes.summary', { n: c.files.length, base: c.baseRef, sha: c.mergeBaseSha.slice(0, 8) })
          }}</span>
          @if (c.truncated) {
            <span class="badge warn">{{ t('changes.truncated') }}</span>
          }
          <span class="spacer"></span>
          <a
            class="button small primary"
            [routerLink]="['/requirements', requirement().id, 'review']"
            [title]="t('reviewView.openHint')"
            data-testid="open-review"
            >{{ t('reviewView.open') }}</a
          >
          <button type="button" class="ghost small" (click)="load()" data-testid="changes-refresh">
            ↻ {{ t('changes.refresh') }}
          </button>
        </div>
        @if (conflicts().size > 0) {
          <p class="muted small" data-testid="changes-conflicts">{{ t('changes.conflicts', { base: c.baseRef }) }}</p>
        }
        @if (conflictsElsewhere(); as elsewhere) {
          <p class="muted small" data-testid="changes-conflicts-elsewhere">
            {{ t('changes.conflictsElsewhere', { files: elsewhere }) }}
          </p>
        }
        <ul class="changed-files" [attr.aria-label]="t('changes.files')">
          @for (f of c.files; track f.path) {
            <li>
              <button
                type="button"
                class="ghost file"
                [class.active]="f.path === selected()?.path"
                (click)="open(f)"
                data-testid="changed-file"
                [attr.data-path]="f.path"
              >
                <span class="badge" [attr.data-status]="f.status">{{ t(keyOf('changes', f.status)) }}</span>
                <span class="path">{{ f.oldPath ? f.oldPath + ' → ' : '' }}{{ f.path }}</span>
                @if (conflictOf(f); as conflict) {
                  @if (conflict.base) {
                    <span class="badge warn" data-testid="file-conflict-base">{{ t('changes.conflictBase') }}</span>
                  }
                  @for (other of conflict.with; track other.requirementId) {
                    <span
                      class="badge warn"
                      data-testid="file-conflict-with"
                      [attr.data-requirement-id]="other.requirementId"
                      >{{ t('changes.conflictWith', { title: other.title }) }}</span
                    >
                  }
                }
                @if (f.binary) {
                  <span class="muted">{{ t('changes.binary') }}</span>
                } @else {
                  <span class="adds">+{{ f.additions }}</span
                  ><span class="dels">−{{ f.deletions }}</span>
                }
              </button>
            </li>
          } @empty {
            <li class="muted">{{ t('changes.none') }}</li>
          }
        </ul>
        @if (selected()) {
          <p class="muted small">{{ t('changes.pick') }}</p>
          <div class="diff" #diffBox (click)="pick($event)" [innerHTML]="diff()" data-testid="diff"></div>
        }
        @if (picked(); as p) {
          <form
            class="line-comment"
            (submit)="$event.preventDefault(); addDraft(comment.value)"
            data-testid="line-comment"
          >
            <label for="am-line-comment">{{ t('changes.commentOn', { path: p.path, line: p.line }) }}</label>
            <code class="muted">{{ p.code }}</code>
            <textarea
              id="am-line-comment"
              #comment
              rows="3"
              maxlength="10000"
              (keydown.control.enter)="addDraft(comment.value)"
              data-testid="line-comment-text"
            ></textarea>
            @if (draftError(); as e) {
              <p class="error small" role="alert" data-testid="line-comment-error">{{ e }}</p>
            }
            <div class="row">
              <span class="spacer"></span>
              <button type="button" class="ghost" (click)="picked.set(null)">{{ t('action.cancel') }}</button>
              <button type="submit" class="primary" data-testid="line-comment-send">
                {{ t('changes.addComment') }}
              </button>
            </div>
          </form>
        }
        <am-review-drafts [requirementId]="requirement().id" [version]="draftsVersion()" />
      } @else {
        <p class="muted">{{ t('board.loading') }}</p>
      }
    </section>
  `,
})
export class ChangesPanel {
  readonly requirement = input.required<Requirement>();
  protected readonly t = inject(I18n).t;
  protected readonly keyOf = keyOf;
  private readonly api = inject(Api);
  private readonly requirements = inject(RequirementsStore);
  private readonly sanitizer = inject(DomSanitizer);
  private readonly theme = inject(Theme);
  private readonly diffElement = viewChild<ElementRef<HTMLElement>>('diffBox');

  protected readonly changes = signal<RequirementChanges | null>(null);
  protected readonly error = signal<string | null>(null);
  protected readonly selected = signal<ChangedFile | null>(null);
  private readonly diffText = signal('');
  protected readonly picked = signal<PickedLine | null>(null);
  /** Why the picked line's comment was not added (an empty one, or the server's refusal), in words. */
  protected readonly draftError = signal<string | null>(null);
  /** Bumped when a draft was added or the list read again: the review below reads its comments again. */
  protected readonly draftsVersion = signal(0);
  /**
   * diff2html's own colour scheme for the theme on screen (its dark scheme was designed for
   * contrast; inverting the light one with a CSS filter left dark-grey text on dark green).
   */
  protected readonly diff = computed<SafeHtml>(() =>
    this.sanitizer.bypassSecurityTrustHtml(
      DOMPurify.sanitize(
        diffHtml(this.diffText(), {
          // The enum's values, named as strings: its module is CommonJS, and only its type is wanted.
          colorScheme: this.theme.effective() as ColorSchemeType,
          drawFileList: false,
          matching: 'none',
          outputFormat: 'line-by-line',
        }),
      ),
    ),
  );
  /** The radar's conflicts by path (live: each radar pass updates the Requirement). */
  protected readonly conflicts = computed(() => {
    const landing = this.requirement().landing;
    const byPath = new Map<string, FileConflict>();
    const at = (path: string) => {
      let conflict = byPath.get(path);
      if (!conflict) {
        conflict = { base: false, with: [] };
        byPath.set(path, conflict);
      }
      return conflict;
    };
    for (const path of landing.conflictPaths) {
      at(path).base = true;
    }
    for (const other of landing.conflictsWith) {
      const title = this.requirements.requirements().get(other.requirementId)?.title ?? other.title;
      for (const path of other.paths) {
        at(path).with.push({ requirementId: other.requirementId, title });
      }
    }
    return byPath;
  });
  /** Conflicting paths the list does not show (a file against a folder, a rename's other side). */
  protected readonly conflictsElsewhere = computed(() => {
    const listed = new Set((this.changes()?.files ?? []).flatMap((f) => (f.oldPath ? [f.path, f.oldPath] : [f.path])));
    const rest = [...this.conflicts().keys()].filter((path) => !listed.has(path));
    return this.changes() && rest.length > 0 ? fileList(rest) : null;
  });

  /** What the list was read for: the branch head and whether the tree was dirty. */
  private readVersion = '';

  constructor() {
    effect(() => {
      const r = this.requirement();
      const version = `${r.id}:${r.worktree?.headSha ?? ''}:${r.worktree?.refreshedAt ?? ''}`;
      untracked(() => {
        if (version !== this.readVersion) {
          this.readVersion = version;
          void this.load();
        }
      });
    });
  }

  protected async load(): Promise<void> {
    const id = this.requirement().id;
    const { data, response } = await this.api.client.GET('/api/requirements/{id}/changes', {
      params: { path: { id } },
    });
    if (!response.ok || !data) {
      this.changes.set(null);
      this.error.set(
        response.status === 409 ? this.t('changes.noWorktree') : this.t('changes.failed', { status: response.status }),
      );
      return;
    }
    this.error.set(null);
    this.changes.set(data);
    this.draftsVersion.update((v) => v + 1);
    const still = this.selected() && data.files.find((f) => f.path === this.selected()?.path);
    if (still) {
      await this.open(still);
    }
  }

  protected conflictOf(file: ChangedFile): FileConflict | null {
    const conflicts = this.conflicts();
    const mine = conflicts.get(file.path);
    const old = file.oldPath ? conflicts.get(file.oldPath) : undefined;
    if (!old) {
      return mine ?? null;
    }
    return {
      base: !!mine?.base || old.base,
      with: [
        ...(mine?.with ?? []),
        ...old.with.filter((o) => !mine?.with.some((m) => m.requirementId === o.requirementId)),
      ],
    };
  }

  protected async open(file: ChangedFile): Promise<void> {
    this.selected.set(file);
    this.picked.set(null);
    this.draftError.set(null);
    const query = file.oldPath ? { oldPath: file.oldPath, path: file.path } : { path: file.path };
    const { data } = await this.api.client.GET('/api/requirements/{id}/changes/diff', {
      params: { path: { id: this.requirement().id }, query },
      parseAs: 'text',
    });
    this.diffText.set(typeof data === 'string' ? data : '');
  }

  /** A click on a line number picks that line of the selected file. */
  protected pick(event: MouseEvent): void {
    const cell = (event.target as HTMLElement).closest('td.d2h-code-linenumber');
    const file = this.selected();
    if (!cell || !file || !this.diffElement()?.nativeElement.contains(cell)) {
      return;
    }
    const newLine = Number(cell.querySelector('.line-num2')?.textContent?.trim());
    const oldLine = Number(cell.querySelector('.line-num1')?.textContent?.trim());
    const code = (cell.parentElement?.querySelector('.d2h-code-line-ctn')?.textContent ?? '').trim();
    if (Number.isInteger(newLine) && newLine > 0) {
      this.picked.set({ code, line: newLine, path: file.path, side: 'new' });
    } else if (Number.isInteger(oldLine) && oldLine > 0) {
      this.picked.set({ code, line: oldLine, path: file.oldPath ?? file.path, side: 'old' });
    }
  }

  /** The picked line's comment, as a draft of the review: it reaches the agent when the review is sent. */
  protected async addDraft(text: string): Promise<void> {
    const p = this.picked();
    if (!p) {
      return;
    }
    if (!text.trim()) {
      this.draftError.set(this.t('changes.emptyComment'));
      return;
    }
    try {
      await this.api.call(
        this.api.client.POST('/api/requirements/{id}/review-comments', {
          body: { body: text.trim(), line: p.line, path: p.path, side: p.side },
          params: { path: { id: this.requirement().id } },
        }),
      );
    } catch (err) {
      // The form and its text stay for another try, saying why.
      this.draftError.set(err instanceof Error ? err.message : String(err));
      return;
    }
    // Closing the form drops its text: only after the server took the comment.
    this.draftError.set(null);
    this.picked.set(null);
    this.draftsVersion.update((v) => v + 1);
  }
}
