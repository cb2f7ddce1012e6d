import * as os from 'node:os';
import * as path from 'node:path';

import { GitError, git, gitSucceeds } from '../core/git/git';

/**
 * The git of landing and of the conflict radar (issue 28): merges computed on objects only
 * (`git merge-tree --write-tree`, git 2.38), commits made with `commit-tree`, and refs moved with
 * compare-and-swap, so that nothing here touches a checkout's files, index or HEAD — except
 * `fastForwardCheckout`, which moves a clean checkout the way `git merge --ff-only` does. Every
 * command goes through the guarded `git()` (no hooks, filters or drivers of the repository run).
 */

const QUICK_MS = 30_000;
/** A merge of two large trees, a commit of a whole worktree's changes. */
const HEAVY_MS = 5 * 60_000;

/** What a merge of two commits gives: its tree (also when it conflicts: with markers), and the conflicting files. */
export interface TreeMerge {
  clean: boolean;
  tree: string;
  paths: string[];
}

/**
 * Merges `theirs` into `ours` with their merge base, in objects only. A conflict is an answer
 * (exit 1), any other failure (unrelated histories, a missing commit) throws.
 */
export async function mergeTrees(cwd: string, ours: string, theirs: string): Promise<TreeMerge> {
  const out = await git(['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs], {
    cwd,
    okCodes: [0, 1],
    timeoutMs: HEAVY_MS,
  });
  const [tree, ...rest] = out.stdout.split('\0');
  return { clean: out.code === 0, paths: [...new Set(rest.filter((p) => p !== ''))].sort(), tree: tree.trim() };
}

/** A commit of `tree` on `parents`, with `message`; `env` may carry an author (a replayed commit keeps its own). */
export async function commitTree(
  cwd: string,
  tree: string,
  parents: string[],
  message: string,
  env: Record<string, string> = {},
): Promise<string> {
  const args = ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', message];
  return (await git(args, { cwd, env: { ...(await commitIdentity(cwd)), ...env }, timeoutMs: QUICK_MS })).stdout.trim();
}

const identities = new Map<string, Promise<Record<string, string>>>();

/**
 * Who the manager's own commits are by: the repository's configured identity when it has one,
 * else "Agent Manager" (a person who never set user.name still gets a land, not a refusal).
 */
export function commitIdentity(cwd: string): Promise<Record<string, string>> {
  let known = identities.get(cwd);
  if (!known) {
    known = (async () => {
      const [name, email] = await Promise.all(
        ['user.name', 'user.email'].map(async (key) =>
          (await git(['config', '--get', key], { cwd, okCodes: [0, 1], timeoutMs: QUICK_MS })).stdout.trim(),
        ),
      );
      const env: Record<string, string> = {};
      if (name === '') {
        env.GIT_AUTHOR_NAME = env.GIT_COMMITTER_NAME = 'Agent Manager';
      }
      if (email === '') {
        env.GIT_AUTHOR_EMAIL = env.GIT_COMMITTER_EMAIL = 'agent-manager@localhost';
      }
      return env;
    })();
    known.catch(() => identities.delete(cwd));
    identities.set(cwd, known);
  }
  return known;
}

/** The commit a ref names, or null. */
export async function resolve(cwd: string, ref: string): Promise<string | null> {
  if (ref.startsWith('-')) {
    return null;
  }
  const out = await git(['rev-parse', '--verify', '-q', `${ref}^{commit}`], {
    cwd,
    okCodes: [0, 1, 128],
    timeoutMs: QUICK_MS,
  });
  return out.code === 0 && out.stdout.trim() !== '' ? out.stdout.trim() : null;
}

export async function treeOf(cwd: string, commit: string): Promise<string> {
  return (await git(['rev-parse', '--verify', `${commit}^{tree}`], { cwd, timeoutMs: QUICK_MS })).stdout.trim();
}

export function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  return gitSucceeds(['merge-base', '--is-ancestor', ancestor, descendant], { cwd, timeoutMs: QUICK_MS });
}

/** Commits reachable from `to` and not from `from`. */
export async function countBetween(cwd: string, from: string, to: string): Promise<number> {
  return Number((await git(['rev-list', '--count', to, `^${from}`], { cwd, timeoutMs: QUICK_MS })).stdout.trim()) || 0;
}

/**
 * In one walk, the commits `base` has and `work` lacks (`behind`) and those `work` has and `base`
 * lacks (`ahead`: 0 when `work` is an ancestor of `base`, landed).
 */
export async function aheadBehind(cwd: string, base: string, work: string): Promise<{ ahead: number; behind: number }> {
  const out = await git(['rev-list', '--left-right', '--count', `${base}...${work}`], { cwd, timeoutMs: QUICK_MS });
  const [behind, ahead] = out.stdout.trim().split(/\s+/).map(Number);
  return { ahead: ahead || 0, behind: behind || 0 };
}

/** The commits `to` has and `from` lacks; null when `from` has commits `to` lacks too (`to` is no fast-forward of it). */
export async function fastForwardCommits(cwd: string, from: string, to: string): Promise<string[] | null> {
  const out = await git(['rev-list', '--left-right', `${from}...${to}`], {
    cwd,
    maxBytes: 4 * 1024 * 1024,
    timeoutMs: QUICK_MS,
  });
  const lines = out.stdout.split('\n').filter((l) => l !== '');
  return lines.some((l) => l.startsWith('<')) ? null : lines.map((l) => l.slice(1));
}

/** The commits that local branches point at whose history holds any of `commits`. */
export async function branchesContaining(cwd: string, commits: string[]): Promise<Set<string>> {
  const out = await git(
    ['for-each-ref', '--format=%(objectname)', ...commits.map((c) => `--contains=${c}`), 'refs/heads/'],
    {
      cwd,
      maxBytes: 16 * 1024 * 1024,
      timeoutMs: QUICK_MS,
    },
  );
  return new Set(out.stdout.split('\n').filter((l) => l !== ''));
}

/**
 * Files that differ between two commits or trees (no rename detection: a rename is its two paths).
 * Given an index that does not exist: `diff-tree` reads the repository's index although comparing
 * two trees needs none, which in a checkout of 20,000 files costs more than the comparison.
 */
export async function changedPaths(cwd: string, from: string, to: string): Promise<string[]> {
  const out = await git(['diff-tree', '-r', '--name-only', '--no-renames', '-z', from, to], {
    cwd,
    env: { GIT_INDEX_FILE: NO_INDEX },
    maxBytes: 64 * 1024 * 1024,
    timeoutMs: HEAVY_MS,
  });
  return out.stdout.split('\0').filter((p) => p !== '');
}

/** A path no file is at (git reads a missing index as an empty one). */
const NO_INDEX = path.join(os.tmpdir(), `agent-manager-no-index-${process.pid}`, 'index');

/**
 * The tree `onto` would have with `commit`'s change applied (a cherry-pick, in objects only).
 * git 2.39 has no `merge-tree --merge-base`, so the merge base is arranged instead: a throwaway
 * commit with `onto`'s tree whose parent is `commit`'s parent makes that parent the merge base.
 */
export async function pickOnto(cwd: string, onto: string, commit: string, parent: string): Promise<TreeMerge> {
  const stand = await commitTree(cwd, await treeOf(cwd, onto), [parent], 'agent-manager: replay base');
  return mergeTrees(cwd, stand, commit);
}

/** A commit's author (kept by a replay) and message. */
export async function commitFacts(
  cwd: string,
  commit: string,
): Promise<{ env: Record<string, string>; message: string; parents: string[] }> {
  const out = await git(['log', '-1', '--format=%an%x00%ae%x00%aI%x00%P%x00%B', commit], {
    cwd,
    maxBytes: 1024 * 1024,
    timeoutMs: QUICK_MS,
  });
  const [name, email, date, parents, ...message] = out.stdout.split('\0');
  return {
    env: { GIT_AUTHOR_DATE: date, GIT_AUTHOR_EMAIL: email, GIT_AUTHOR_NAME: name },
    message: message.join('\0').replace(/\n+$/, ''),
    parents: parents.trim() === '' ? [] : parents.trim().split(' '),
  };
}

/** The commits of `head` that `base` lacks, oldest first (merges and all, first-parent order is not assumed). */
export async function commitsSince(cwd: string, base: string, head: string): Promise<string[]> {
  const out = await git(['rev-list', '--reverse', '--topo-order', head, `^${base}`], {
    cwd,
    maxBytes: 16 * 1024 * 1024,
    timeoutMs: QUICK_MS,
  });
  return out.stdout.split('\n').filter((l) => l !== '');
}

/** Moves `ref` from `from` to `to` only if it still names `from` (false when it moved meanwhile). */
export function compareAndSwap(cwd: string, ref: string, to: string, from: string, reason: string): Promise<boolean> {
  return gitSucceeds(['update-ref', '-m', reason, ref, to, from], { cwd, timeoutMs: QUICK_MS });
}

/** Work trees of the repository and the branch each has checked out. */
export async function worktreeBranches(cwd: string): Promise<Array<{ path: string; branch: string | null }>> {
  const out = await git(['worktree', 'list', '--porcelain', '-z'], { cwd, timeoutMs: QUICK_MS });
  const trees: Array<{ path: string; branch: string | null }> = [];
  for (const field of out.stdout.split('\0')) {
    if (field.startsWith('worktree ')) {
      trees.push({ branch: null, path: field.slice('worktree '.length) });
    } else if (field.startsWith('branch ') && trees.length > 0) {
      trees[trees.length - 1].branch = field.slice('branch '.length);
    }
  }
  return trees;
}

/** Tracked files with changes (staged or not) in a checkout; untracked ones with `untracked`. */
export async function uncommittedFiles(cwd: string, untracked: boolean): Promise<string[]> {
  const out = await git(
    ['status', '--porcelain=v1', '-z', `--untracked-files=${untracked ? 'all' : 'no'}`, '--ignore-submodules=dirty'],
    {
      allowTruncated: true,
      cwd,
      maxBytes: 4 * 1024 * 1024,
      timeoutMs: HEAVY_MS,
    },
  );
  const files: string[] = [];
  const fields = out.stdout.split('\0');
  for (let i = 0; i < fields.length; i += 1) {
    const entry = fields[i];
    if (entry.length < 4) {
      continue;
    }
    files.push(entry.slice(3));
    if (entry[0] === 'R' || entry[0] === 'C') {
      i += 1; // the rename's source follows
    }
  }
  return files;
}

/**
 * Moves a clean checkout of `ref` to its fast-forward `to`, files and all: `git merge --ff-only`
 * (refuses rather than overwrite anything, and moves HEAD's branch with it). Returns git's reason
 * when it refuses.
 */
export async function fastForwardCheckout(cwd: string, to: string): Promise<string | null> {
  try {
    await git(['merge', '--ff-only', '--no-edit', '--no-stat', '--no-verify', to], { cwd, timeoutMs: HEAVY_MS });
    return null;
  } catch (err) {
    if (err instanceof GitError && err.code !== null) {
      return err.stderr.trim().split('\n').slice(0, 6).join('\n') || err.message;
    }
    throw err;
  }
}
