import * as path from 'node:path';

import type { ChangedFile, ChangedFileStatus } from '@libs/contracts';

import { git } from '../core/git/git';

/** A changed file as listed, with its content's id in the work (zeros when deleted): what "viewed" is kept against. */
export type ListedFile = ChangedFile & { blob: string };

/** At most this many files are listed; the answer then says `truncated`. */
export const CHANGES_MAX_FILES = 5000;
/** Each git call of a changes or diff read ends after this long. */
export const CHANGES_TIMEOUT_MS = 10_000;
/** A file's diff is cut after this many bytes. */
export const DIFF_MAX_BYTES = 2 * 1024 * 1024;

function statusOf(letter: string): ChangedFileStatus {
  switch (letter[0]) {
    case 'A':
    case 'C':
      return 'added';
    case 'D':
      return 'deleted';
    case 'R':
      return 'renamed';
    default:
      return 'modified';
  }
}

/**
 * Parses `git diff -z --raw --numstat -M`: the raw records (`:mode mode sha sha STATUS\0path\0`,
 * two paths for a rename or copy) come first, then the numstat records (`add\tdel\tpath\0`, or
 * `add\tdel\t\0old\0new\0` for a rename), in the same order.
 */
export function parseRawNumstat(output: string): ListedFile[] {
  const fields = output.split('\0');
  const files: ListedFile[] = [];
  let i = 0;
  while (i < fields.length && fields[i]?.startsWith(':')) {
    const raw = fields[i].split(' ');
    const status = raw[4] ?? 'M';
    const twoPaths = status.startsWith('R') || status.startsWith('C');
    const first = fields[i + 1];
    const second = twoPaths ? fields[i + 2] : null;
    if (!first || second === '' || second === undefined) {
      // A record cut short (the output hit its bound): the answer says truncated anyway.
      break;
    }
    files.push({
      additions: 0,
      binary: false,
      blob: raw[3] ?? '',
      deletions: 0,
      oldPath: status.startsWith('R') ? first : null,
      path: second ?? first,
      status: statusOf(status),
    });
    i += twoPaths ? 3 : 2;
  }
  let index = 0;
  while (i < fields.length && index < files.length) {
    const record = fields[i];
    if (record === '') {
      i += 1;
      continue;
    }
    const [added, deleted, inline] = record.split('\t');
    const file = files[index];
    file.binary = added === '-';
    file.additions = file.binary ? 0 : Number(added);
    file.deletions = file.binary ? 0 : Number(deleted);
    // A rename's numstat names its paths in the next two fields.
    i += inline === '' ? 3 : 1;
    index += 1;
  }
  return files;
}

/**
 * What changed between two commits of the person's repository — the merge base and the agent's
 * imported work (its branch with its uncommitted files on top) — through one `git diff` of the
 * two trees. Bounded in files, bytes and time.
 */
export async function listChanges(
  top: string,
  mergeBase: string,
  work: string,
): Promise<{ files: ListedFile[]; truncated: boolean }> {
  const out = await git(
    // Whole blob ids (--no-abbrev): what a file was viewed at is compared with them, and an
    // abbreviation grows with the repository.
    ['diff', '-z', '--raw', '--no-abbrev', '--numstat', '-M', '--no-color', '--no-ext-diff', mergeBase, work, '--'],
    {
      allowTruncated: true,
      cwd: top,
      maxBytes: 32 * 1024 * 1024,
      timeoutMs: CHANGES_TIMEOUT_MS,
    },
  );
  // A cut output lacks some counts (and may end in a partial record): the answer says truncated.
  const listed = parseRawNumstat(out.stdout);
  const files = listed.slice(0, CHANGES_MAX_FILES);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, truncated: out.truncated || listed.length > CHANGES_MAX_FILES };
}

/** Pathspecs that leave the linked paths out of a `git status`. */
export function excludingLinks(links: readonly string[]): string[] {
  return links.length === 0 ? [] : ['--', '.', ...links.map((link) => `:(exclude,top)${link}`)];
}

/**
 * True when `child` is `parent` or below it (both absolute). `path.relative` climbs out with a
 * `..` segment; a name that merely starts with two dots (`..foo`) is a child like any other.
 */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return !climbsOut(relative) && !path.isAbsolute(relative);
}

function climbsOut(relative: string): boolean {
  return relative === '..' || relative.startsWith(`..${path.sep}`);
}

/**
 * A path the changes API was given, normalized, when it names something inside the worktree;
 * null when it does not: empty, absolute, with a NUL, climbing out through a `..` segment, the
 * worktree itself, or its `.git`. Only the text is judged: symlinks are the caller's to resolve.
 */
export function worktreeRelativePath(file: string): string | null {
  if (file === '' || file.includes('\0') || path.isAbsolute(file)) {
    return null;
  }
  const normalized = path.normalize(file);
  if (
    normalized === '.' ||
    normalized === `.${path.sep}` ||
    climbsOut(normalized) ||
    normalized === '.git' ||
    normalized.startsWith(`.git${path.sep}`)
  ) {
    return null;
  }
  return normalized;
}

/**
 * A file's unified diff between the merge base and the agent's work, in the person's repository.
 * The path is literal (`:(literal)`), never a pattern: `*` or `:(glob)` in a name is that name.
 */
export async function fileDiff(
  top: string,
  mergeBase: string,
  work: string,
  file: string,
  oldPath: string | null,
): Promise<{ diff: string; truncated: boolean }> {
  const paths = oldPath && oldPath !== file ? [oldPath, file] : [file];
  const out = await git(
    ['diff', '-M', '--no-color', '--no-ext-diff', mergeBase, work, '--', ...paths.map((p) => `:(literal)${p}`)],
    {
      allowTruncated: true,
      cwd: top,
      maxBytes: DIFF_MAX_BYTES,
      timeoutMs: CHANGES_TIMEOUT_MS,
    },
  );
  return { diff: out.stdout, truncated: out.truncated };
}
