import { git } from '../core/git/git';
import type { Comparison } from '../worktrees/worktree-changes.service';
import { CHANGES_TIMEOUT_MS } from '../worktrees/worktree-changes';
import { Hunk, hunksOf, moveRange } from './diff-lines';
import type { ReviewCommentEntity } from './review-comment.entities';

/** A file's content read to check a moved quote (larger files leave their threads where they are). */
const FILE_MAX_BYTES = 8 * 1024 * 1024;
/** The `-U0` diff of one file between two commits. */
const HUNKS_MAX_BYTES = 8 * 1024 * 1024;

/** Where one comment goes: its new lines on the new commit, or `outdated`. */
export interface Reanchoring {
  id: string;
  /** The commit it was anchored on when read (the write applies the move only if it still is). */
  from: string;
  to: { commit: string; line: number; endLine: number } | 'outdated';
}

/** The file's lines at `commit`, or null when git cannot read it (too large, or it failed). */
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

/**
 * What changed in one file between two commits, as `-U0` hunks (no hunks merged across unchanged
 * lines); `gone` when the commit the comments were read on no longer exists (collected), null when
 * git could not say now (a timeout): the comments then stay where they are until the next import.
 */
async function hunksBetween(top: string, from: string, to: string, file: string): Promise<Hunk[] | 'gone' | null> {
  try {
    const out = await git(
      ['diff', '-U0', '--inter-hunk-context=0', '--no-color', '--no-renames', from, to, '--', `:(literal)${file}`],
      { cwd: top, maxBytes: HUNKS_MAX_BYTES, timeoutMs: CHANGES_TIMEOUT_MS },
    );
    return hunksOf(out.stdout);
  } catch {
    const exists = await git(['cat-file', '-e', `${from}^{commit}`], {
      cwd: top,
      okCodes: [0, 1, 128],
      timeoutMs: CHANGES_TIMEOUT_MS,
    }).catch(() => null);
    return exists !== null && exists.code !== 0 ? 'gone' : null;
  }
}

/**
 * Where each comment's lines are in the compared work (side `new`) or merge base (side `old`):
 * moved by what was added or removed above them, and outdated when a change touched them, the
 * file is gone, or the moved lines no longer read as quoted. Comments already on that commit, and
 * those git cannot answer for now, are left out. One diff and one read per file and commit pair,
 * in the person's repository, one pair at a time (nothing of a pair is kept after it).
 */
export async function reanchor(compared: Comparison, rows: readonly ReviewCommentEntity[]): Promise<Reanchoring[]> {
  const pairs = new Map<string, ReviewCommentEntity[]>();
  for (const row of rows) {
    const target = row.side === 'new' ? compared.work : compared.mergeBase;
    if (row.anchorCommit !== target) {
      const key = `${row.anchorCommit}\0${target}\0${row.path}`;
      pairs.set(key, [...(pairs.get(key) ?? []), row]);
    }
  }
  const moves: Reanchoring[] = [];
  for (const [key, comments] of pairs) {
    const [from, target, file] = key.split('\0');
    const hunks = await hunksBetween(compared.top, from, target, file);
    if (hunks === null) {
      continue;
    }
    const placed = comments.map((row) => ({
      moved: hunks === 'gone' ? null : moveRange(hunks, row.line, row.endLine),
      row,
    }));
    const lines = placed.some((p) => p.moved !== null) ? await linesAt(compared.top, target, file) : [];
    if (lines === null) {
      continue;
    }
    for (const { moved, row } of placed) {
      const reads = moved !== null && lines.slice(moved.line - 1, moved.endLine).join('\n') === row.excerpt;
      moves.push({ from, id: row.id, to: reads && moved ? { commit: target, ...moved } : 'outdated' });
    }
  }
  return moves;
}
