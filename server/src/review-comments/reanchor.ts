import type { ReviewCommentState } from '@libs/contracts';

import { git } from '../core/git/git';
import type { Comparison } from '../worktrees/worktree-changes.service';
import { CHANGES_TIMEOUT_MS } from '../worktrees/worktree-changes';
import { hunksOf, moveRange } from './diff-lines';
import type { ReviewCommentEntity } from './review-comment.entities';

/** A file's content read to check a moved quote: larger files outdate their threads instead. */
const FILE_MAX_BYTES = 8 * 1024 * 1024;

/** Where one comment goes: its new lines on the new commit, or null (outdated). */
export interface Reanchoring {
  id: string;
  /** The commit it was anchored on, and its state, when read (the write applies the move only if both still are). */
  from: string;
  state: ReviewCommentState;
  to: { commit: string; line: number; endLine: number } | null;
}

/** The file's lines at `commit`, or null when it has no such file (or it is too large to read). */
async function linesAt(top: string, commit: string, file: string): Promise<string[] | null> {
  try {
    const out = await git(['cat-file', 'blob', `${commit}:${file}`], {
      allowTruncated: true,
      cwd: top,
      maxBytes: FILE_MAX_BYTES,
      timeoutMs: CHANGES_TIMEOUT_MS,
    });
    return out.truncated ? null : out.stdout.split('\n');
  } catch {
    return null;
  }
}

/** What changed in one file between two commits, as `-U0` hunks; null when git cannot say (a commit gone). */
async function hunksBetween(top: string, from: string, to: string, file: string) {
  try {
    const out = await git(
      ['diff', '-U0', '--no-color', '--no-ext-diff', '--no-renames', from, to, '--', `:(literal)${file}`],
      { cwd: top, maxBytes: FILE_MAX_BYTES, timeoutMs: CHANGES_TIMEOUT_MS },
    );
    return hunksOf(out.stdout);
  } catch {
    return null;
  }
}

/**
 * Where each comment's lines are in the compared work (side `new`) or merge base (side `old`):
 * moved by what was added or removed above them, and outdated when a change touched them, the
 * file is gone, or the moved lines no longer read as quoted. Comments already on that commit are
 * left out. One diff and one read per file and commit pair, in the person's repository.
 */
export async function reanchor(compared: Comparison, rows: readonly ReviewCommentEntity[]): Promise<Reanchoring[]> {
  const moves: Reanchoring[] = [];
  const hunks = new Map<string, ReturnType<typeof hunksBetween>>();
  const files = new Map<string, Promise<string[] | null>>();
  for (const row of rows) {
    const target = row.side === 'new' ? compared.work : compared.mergeBase;
    if (row.anchorCommit === target) {
      continue;
    }
    const pair = `${row.anchorCommit}\0${target}\0${row.path}`;
    if (!hunks.has(pair)) {
      hunks.set(pair, hunksBetween(compared.top, row.anchorCommit, target, row.path));
    }
    const at = `${target}\0${row.path}`;
    if (!files.has(at)) {
      files.set(at, linesAt(compared.top, target, row.path));
    }
    const changes = await hunks.get(pair);
    const lines = (await files.get(at)) ?? null;
    const moved = changes && lines ? moveRange(changes, row.line, row.endLine) : null;
    const reads =
      moved !== null && lines !== null && lines.slice(moved.line - 1, moved.endLine).join('\n') === row.excerpt;
    moves.push({
      from: row.anchorCommit,
      id: row.id,
      state: row.state,
      to: reads && moved ? { commit: target, ...moved } : null,
    });
  }
  return moves;
}
