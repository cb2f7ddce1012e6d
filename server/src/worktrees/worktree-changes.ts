import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import type { ChangedFile, ChangedFileStatus } from '@libs/contracts';

import { git } from '../core/git/git';

/** At most this many files are listed; the answer then says `truncated`. */
export const CHANGES_MAX_FILES = 5000;
/** Each git call of a changes or diff read ends after this long. */
export const CHANGES_TIMEOUT_MS = 10_000;
/** A file's diff is cut after this many bytes. */
export const DIFF_MAX_BYTES = 2 * 1024 * 1024;
/** Untracked files larger than this are listed without a line count. */
const UNTRACKED_COUNT_MAX_BYTES = 1024 * 1024;
const BINARY_SNIFF_BYTES = 8000;

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
export function parseRawNumstat(output: string): ChangedFile[] {
  const fields = output.split('\0');
  const files: ChangedFile[] = [];
  let i = 0;
  while (i < fields.length && fields[i]?.startsWith(':')) {
    const status = fields[i].split(' ')[4] ?? 'M';
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

/** Line count and binary flag of an untracked file, read with a bound. */
async function untrackedFile(root: string, relative: string): Promise<ChangedFile> {
  const file: ChangedFile = { additions: 0, binary: false, deletions: 0, oldPath: null, path: relative, status: 'added' };
  try {
    const absolute = path.join(root, relative);
    const stat = await fs.lstat(absolute);
    if (!stat.isFile()) {
      // A symlink is one line (its target), as git shows it once added.
      file.additions = stat.isSymbolicLink() ? 1 : 0;
      return file;
    }
    if (stat.size > UNTRACKED_COUNT_MAX_BYTES) {
      const handle = await fs.open(absolute, 'r');
      try {
        const head = Buffer.alloc(BINARY_SNIFF_BYTES);
        const { bytesRead } = await handle.read(head, 0, BINARY_SNIFF_BYTES, 0);
        file.binary = head.subarray(0, bytesRead).includes(0);
      } finally {
        await handle.close();
      }
      return file;
    }
    const bytes = await fs.readFile(absolute);
    file.binary = bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
    if (!file.binary && bytes.length > 0) {
      let lines = 0;
      for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) {
        lines += 1;
      }
      file.additions = bytes[bytes.length - 1] === 10 ? lines : lines + 1;
    }
  } catch {
    // Gone meanwhile: listed as added with nothing counted.
  }
  return file;
}

/**
 * Committed, uncommitted and untracked work of a worktree against `mergeBase`: tracked files
 * through one `git diff` of the working tree against that commit, untracked ones (not ignored)
 * read directly. Bounded in files, bytes and time.
 */
export async function listChanges(worktree: string, mergeBase: string, links: readonly string[] = []): Promise<{ files: ChangedFile[]; truncated: boolean }> {
  const options = { allowTruncated: true, cwd: worktree, maxBytes: 32 * 1024 * 1024, timeoutMs: CHANGES_TIMEOUT_MS };
  const [tracked, untracked] = await Promise.all([
    git(['diff', '-z', '--raw', '--numstat', '-M', '--no-color', '--no-ext-diff', '--ignore-submodules=dirty', mergeBase, '--'], options),
    // Linked paths (node_modules → the checkout's) are the manager's doing, not the agent's work.
    git(['ls-files', '-z', '--others', '--exclude-standard', ...links.map((link) => `--exclude=/${link}`)], options),
  ]);
  let truncated = tracked.truncated || untracked.truncated;
  // A cut output lacks some counts (and may end in a partial record): the answer says truncated.
  const trackedFiles = parseRawNumstat(tracked.stdout);
  const files = trackedFiles.slice(0, CHANGES_MAX_FILES);
  const untrackedPaths = untracked.stdout.split('\0').filter((p) => p !== '');
  if (untracked.truncated) {
    untrackedPaths.pop();
  }
  const room = CHANGES_MAX_FILES - files.length;
  if (trackedFiles.length > CHANGES_MAX_FILES || untrackedPaths.length > room) {
    truncated = true;
  }
  const taken = untrackedPaths.slice(0, Math.max(0, room));
  // Read a few at a time: thousands of open files at once would hit the descriptor limit.
  for (let start = 0; start < taken.length; start += 64) {
    files.push(...(await Promise.all(taken.slice(start, start + 64).map((p) => untrackedFile(worktree, p)))));
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, truncated };
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
  if (normalized === '.' || normalized === `.${path.sep}` || climbsOut(normalized) || normalized === '.git' || normalized.startsWith(`.git${path.sep}`)) {
    return null;
  }
  return normalized;
}

/** A file's unified diff against `mergeBase` (tracked), or against nothing (untracked). */
export async function fileDiff(worktree: string, mergeBase: string, file: string, oldPath: string | null): Promise<{ diff: string; truncated: boolean }> {
  const options = { allowTruncated: true, cwd: worktree, maxBytes: DIFF_MAX_BYTES, timeoutMs: CHANGES_TIMEOUT_MS };
  const paths = oldPath && oldPath !== file ? [oldPath, file] : [file];
  const tracked = await git(['diff', '-M', '--no-color', '--no-ext-diff', mergeBase, '--', ...paths], options);
  if (tracked.stdout !== '') {
    return { diff: tracked.stdout, truncated: tracked.truncated };
  }
  const ignored = await git(['ls-files', '-z', '--others', '--exclude-standard', '--', file], options);
  if (ignored.stdout === '') {
    return { diff: '', truncated: false };
  }
  // Untracked: the whole file as added (exit 1 means "they differ").
  const untracked = await git(['diff', '--no-index', '--no-color', '--no-ext-diff', '--', '/dev/null', file], { ...options, okCodes: [0, 1] });
  return { diff: untracked.stdout, truncated: untracked.truncated };
}
