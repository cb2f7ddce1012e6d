import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The list of a workspace's prepared working copies (issue 48 §6), in its data directory (no
 * agent sees it): written only by WorktreePool while the manager runs, and emptied by `doctor
 * --clean` while it does not. A copy is listed before anything of it is made and leaves the list
 * before a Requirement takes it, so a crash never leaves a folder that two owners think theirs:
 * a listed `filling` copy is cleared at the next start, and an unlisted folder with no Requirement
 * is the sweeper's orphan.
 */
export interface PooledCopy {
  /** 8 hex digits: its folder is `pool-<id>`, its snapshot index `worktree-pool/<id>.index`. */
  id: string;
  path: string;
  state: 'filling' | 'ready';
  /** The base it was made at (the person's branch, or a commit when their HEAD is detached). */
  baseRef: string;
  baseSha: string;
  /** What it was prepared with (setup command, links, subfolder): a copy of another recipe is stale. */
  recipe: string;
  madeAt: string;
  /** When its setup command finished (null: still filling). */
  setupAt: string | null;
}

export function poolManifestPath(dataDirectory: string): string {
  return path.join(dataDirectory, 'worktree-pool.json');
}

/** The manager's own index of a pooled copy's checkout: its first snapshot then hashes only what setup changed. */
export function poolIndexPath(dataDirectory: string, id: string): string {
  return path.join(dataDirectory, 'worktree-pool', `${id}.index`);
}

function isPooledCopy(value: unknown): value is PooledCopy {
  const copy = value as Partial<PooledCopy> | null;
  return (
    typeof copy === 'object' &&
    copy !== null &&
    typeof copy.id === 'string' &&
    /^[0-9a-f]{8}$/.test(copy.id) &&
    typeof copy.path === 'string' &&
    path.isAbsolute(copy.path) &&
    path.basename(copy.path) === `pool-${copy.id}` &&
    (copy.state === 'filling' || copy.state === 'ready') &&
    typeof copy.baseRef === 'string' &&
    typeof copy.baseSha === 'string' &&
    typeof copy.recipe === 'string' &&
    typeof copy.madeAt === 'string' &&
    (copy.setupAt === null || typeof copy.setupAt === 'string')
  );
}

/** The listed copies; a missing or unreadable list is an empty pool (what it named is then the sweeper's). */
export function readPoolManifest(dataDirectory: string): PooledCopy[] {
  try {
    const parsed = JSON.parse(fs.readFileSync(poolManifestPath(dataDirectory), 'utf8')) as unknown;
    return Array.isArray(parsed) ? parsed.filter(isPooledCopy) : [];
  } catch {
    return [];
  }
}

/** Written whole and renamed into place: a crash leaves the old list or the new one. */
export function writePoolManifest(dataDirectory: string, copies: PooledCopy[]): void {
  const file = poolManifestPath(dataDirectory);
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(copies, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temporary, file);
}

/**
 * `doctor --clean` (the manager stopped): every listed copy's folder and index, then the list.
 * Resolves with the folders removed.
 */
export async function emptyPool(dataDirectory: string): Promise<string[]> {
  const copies = readPoolManifest(dataDirectory);
  for (const copy of copies) {
    await fs.promises.rm(copy.path, { force: true, recursive: true });
    await fs.promises.rm(poolIndexPath(dataDirectory, copy.id), { force: true });
  }
  await fs.promises.rm(poolManifestPath(dataDirectory), { force: true });
  return copies.map((copy) => copy.path);
}
