import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import ignore from 'ignore';

import { git } from '../core/git/git';

/** The file at the workspace root listing gitignored files a worktree needs (Conductor's format). */
export const WORKTREE_INCLUDE_FILE = '.worktreeinclude';
/** Files looked at inside ignored folders that no pattern names whole. */
const WALK_MAX_ENTRIES = 50_000;

export interface FilesReport {
  copied: string[];
  linked: string[];
  skipped: string[];
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false;
  }
}

/** True when `relative` is `prefix` or inside it. */
function within(relative: string, prefix: string): boolean {
  const clean = prefix.replace(/\/+$/, '');
  return relative === clean || relative.startsWith(`${clean}/`);
}

/**
 * Gives a new worktree the gitignored files it needs to run: `links` (configuration, e.g.
 * `node_modules`) become symlinks to the checkout's copy; gitignored files matching
 * `.worktreeinclude` (gitignore-style patterns, read by the maintained `ignore` matcher) are
 * copied. A path the worktree already has (tracked there) is never overwritten.
 */
export async function provideFiles(checkout: string, worktree: string, links: readonly string[]): Promise<FilesReport> {
  const report: FilesReport = { copied: [], linked: [], skipped: [] };
  for (const link of links) {
    const relative = path.normalize(link).replace(/\/+$/, '');
    const source = path.join(checkout, relative);
    const target = path.join(worktree, relative);
    if (!(await exists(source))) {
      continue;
    }
    if (await exists(target)) {
      report.skipped.push(relative);
      continue;
    }
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.symlink(source, target);
    report.linked.push(relative);
  }
  let patterns: string;
  try {
    patterns = await fs.readFile(path.join(checkout, WORKTREE_INCLUDE_FILE), 'utf8');
  } catch {
    return report;
  }
  const matcher = ignore().add(patterns);
  // Ignored entries of the checkout; a wholly ignored folder is one entry ending in '/'.
  const listed = await git(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], {
    cwd: checkout,
    timeoutMs: 60_000,
  });
  const wanted: string[] = [];
  let budget = WALK_MAX_ENTRIES;
  const walk = async (relative: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await fs.readdir(path.join(checkout, relative), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (--budget < 0) {
        return;
      }
      const child = `${relative}${entry.name}${entry.isDirectory() ? '/' : ''}`;
      if (matcher.ignores(child)) {
        wanted.push(child);
      } else if (entry.isDirectory()) {
        await walk(child);
      }
    }
  };
  for (const entry of listed.stdout.split('\0').filter((e) => e !== '')) {
    if (links.some((link) => within(entry, link))) {
      continue;
    }
    if (matcher.ignores(entry)) {
      wanted.push(entry);
    } else if (entry.endsWith('/')) {
      await walk(entry);
    }
  }
  for (const entry of wanted) {
    const relative = entry.replace(/\/+$/, '');
    const target = path.join(worktree, relative);
    if (await exists(target)) {
      report.skipped.push(relative);
      continue;
    }
    await fs.mkdir(path.dirname(target), { recursive: true });
    // Symlinks inside stay symlinks; nothing outside the copied entry is followed.
    await fs.cp(path.join(checkout, relative), target, {
      errorOnExist: false,
      force: false,
      preserveTimestamps: true,
      recursive: true,
      verbatimSymlinks: true,
    });
    report.copied.push(relative);
  }
  return report;
}
