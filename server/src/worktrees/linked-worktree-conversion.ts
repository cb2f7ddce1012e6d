import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { git } from '../core/git/git';
import { initAgentRepository } from './agent-repository';
import { isInside } from './worktree-changes';

/**
 * Issue 44's migration: a worktree made before it is a linked worktree of the person's repository
 * (`git worktree add`), whose agent could write the person's objects and refs. At its next run it
 * becomes an own repository in place: the same folder, files, branch and staged changes, with a
 * `.git` directory of its own instead of the `.git` file that pointed into the person's
 * repository, whose entry for it is then removed. Each step can be repeated after a kill.
 */

const LINK = /^gitdir: (.+)\n?$/;

async function lstatKind(file: string): Promise<'missing' | 'file' | 'directory' | 'other'> {
  const stat = await fs.lstat(file).catch(() => null);
  return stat === null ? 'missing' : stat.isFile() ? 'file' : stat.isDirectory() ? 'directory' : 'other';
}

async function readLink(file: string): Promise<string | null> {
  const handle = await fs
    .open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK)
    .catch(() => null);
  if (handle === null) {
    return null;
  }
  try {
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

export interface LinkedWorktree {
  personTop: string;
  personCommonDir: string;
  /** The worktree's top. */
  target: string;
  /** The Requirement's branch (what its `.git` entry's HEAD names) and where the person's repository has it. */
  branch: string;
  head: string;
  base: { ref: string; sha: string } | null;
  /** The manager's snapshot index: it starts as a copy of the worktree's index. */
  snapshotIndex: string;
}

/** Whether `target` is still a linked worktree (a `.git` file), and then its entry in the person's repository. */
export async function linkedEntry(target: string, personCommonDir: string): Promise<string | null> {
  const dotGit = path.join(target, '.git');
  if ((await lstatKind(dotGit)) !== 'file') {
    return null;
  }
  const text = (await readLink(dotGit)) ?? '';
  const named = LINK.exec(text)?.[1];
  if (named === undefined) {
    return null;
  }
  const entry = path.resolve(target, named.trim());
  // Only an entry of the person's own repository's worktree list is the manager's to remove.
  return isInside(entry, path.join(personCommonDir, 'worktrees')) ? entry : null;
}

/**
 * Turns the linked worktree at `target` into an own repository: a new repository beside it
 * (`<target>.own`) on the same branch and commit, the worktree's index copied in (staged changes
 * and stat data kept), then `.git` replaced by its `.git` directory, and the person's entry for
 * the worktree removed. Returns false when `target` was no linked worktree of the person's
 * repository (nothing done).
 */
export async function convertLinkedWorktree(spec: LinkedWorktree): Promise<boolean> {
  const dotGit = path.join(spec.target, '.git');
  const scratch = `${spec.target}.own`;
  const staged = path.join(scratch, '.git');
  // A kill between removing the `.git` file and moving the new one in: finish the move.
  if ((await lstatKind(dotGit)) === 'missing' && (await lstatKind(staged)) === 'directory') {
    await fs.rename(staged, dotGit);
    await fs.rm(scratch, { force: true, recursive: true });
    await git(['worktree', 'prune'], { cwd: spec.personTop, timeoutMs: 30_000 }).catch(() => undefined);
    return true;
  }
  const entry = await linkedEntry(spec.target, spec.personCommonDir);
  if (entry === null) {
    return false;
  }
  await fs.rm(scratch, { force: true, recursive: true });
  await initAgentRepository({
    base: spec.base,
    branch: spec.branch,
    personCommonDir: spec.personCommonDir,
    personTop: spec.personTop,
    start: spec.head,
    target: scratch,
  });
  const index = path.join(entry, 'index');
  if ((await lstatKind(index)) === 'file') {
    await fs.copyFile(index, path.join(staged, 'index'));
    await fs.mkdir(path.dirname(spec.snapshotIndex), { mode: 0o700, recursive: true });
    await fs.copyFile(index, spec.snapshotIndex);
  }
  await fs.rm(dotGit, { force: true });
  await fs.rename(staged, dotGit);
  await fs.rm(scratch, { force: true, recursive: true });
  await fs.rm(entry, { force: true, recursive: true });
  // Nothing of the agent's is read: git only forgets entries whose folders are gone.
  await git(['worktree', 'prune'], { cwd: spec.personTop, timeoutMs: 30_000 }).catch(() => undefined);
  return true;
}
