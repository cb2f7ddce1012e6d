import { realpathSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Injectable } from '@nestjs/common';

import type { RequirementChanges } from '@libs/contracts';

import { DomainError, conflict, invalid, notFound } from '../core/errors/domain-error';
import { RequirementsService } from '../requirements/requirements.service';
import { git } from '../core/git/git';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { excludingLinks, fileDiff, isInside, listChanges, worktreeRelativePath } from './worktree-changes';
import { QUICK_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';
import { WorktreesRepository } from './worktrees.repository';

function noWorktree(requirementId: string): DomainError {
  return conflict('no_worktree', `Requirement ${requirementId} has no worktree (in place, not started yet, or removed)`);
}

/**
 * What a Requirement's agent changed in its worktree: the branch's state against its base (head,
 * ahead/behind, dirty) that the card shows, and the Changes tab's file list and diffs against the
 * merge base. Reads only: they never take the Requirement's lock, and every git read leaves the
 * index alone (`GIT_OPTIONAL_LOCKS=0` in `git()`), so they never disturb a running agent.
 */
@Injectable()
export class WorktreeChanges {
  private readonly mergeBases = new Map<string, string>();
  private readonly lastComparison = new Map<string, { path: string; mergeBase: string }>();

  constructor(
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** GET /requirements/:id/changes */
  async changes(requirementId: string): Promise<RequirementChanges> {
    // Usually nothing moved since the last read: list against the merge base seen then while
    // git confirms it (one process less on the way), and list again only if it did move.
    const last = this.lastComparison.get(requirementId);
    const links = this.workspace.links();
    const early = last ? listChanges(last.path, last.mergeBase, links).catch(() => null) : null;
    const { head, mergeBase, row } = await this.comparison(requirementId);
    const top = row.path as string;
    this.lastComparison.set(requirementId, { mergeBase, path: top });
    const guessed = early !== null && last?.mergeBase === mergeBase && last.path === top ? await early : null;
    const listed = guessed ?? (await this.stillThere(requirementId, top, () => listChanges(top, mergeBase, links)));
    return { baseRef: row.baseRef ?? mergeBase, files: listed.files, headSha: head, mergeBaseSha: mergeBase, truncated: listed.truncated };
  }

  /** GET /requirements/:id/changes/diff: a path outside the worktree is refused. */
  async diff(requirementId: string, file: string, oldPath: string | null): Promise<{ diff: string; truncated: boolean }> {
    const { mergeBase, row } = await this.comparison(requirementId);
    const top = row.path as string;
    const checked = [file, ...(oldPath === null ? [] : [oldPath])].map((p) => this.insideWorktree(top, p));
    return this.stillThere(requirementId, top, () => fileDiff(top, mergeBase, checked[0], checked[1] ?? null));
  }

  /**
   * A read of a worktree that a cancel, a delete or a land removes meanwhile fails in git (a
   * spawn in a folder that is gone is ENOENT): that is the same 409 as a read that came later,
   * not a server error. Any other failure stays what it is.
   */
  private async stillThere<T>(requirementId: string, top: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (!(await fs.stat(path.join(top, '.git')).catch(() => null))) {
        throw noWorktree(requirementId);
      }
      throw err;
    }
  }

  /** The branch's state against its base, for the card: head, commits ahead and behind, uncommitted work. */
  async branchState(row: RequirementWorktreeEntity): Promise<Pick<RequirementWorktreeEntity, 'ahead' | 'behind' | 'dirty' | 'headSha'>> {
    const top = row.path as string;
    const env = await this.workspace.lfsEnvironment((await this.workspace.gitWorkspace())?.top ?? top);
    const headSha = await this.workspace.resolveCommit(top, 'HEAD');
    const base = (row.baseRef !== null ? await this.workspace.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    let ahead = 0;
    let behind = 0;
    if (base !== null && headSha !== null) {
      const counts = await git(['rev-list', '--left-right', '--count', `${base}...${headSha}`], { cwd: top, env, timeoutMs: QUICK_TIMEOUT_MS });
      [behind, ahead] = counts.stdout.trim().split(/\s+/).map(Number) as [number, number];
    }
    // Any output at all is dirty: the first bytes are enough.
    const status = await git(['status', '--porcelain', '-z', '--untracked-files=normal', ...excludingLinks(this.workspace.links())], {
      allowTruncated: true,
      cwd: top,
      env,
      maxBytes: 4096,
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    return { ahead, behind, dirty: status.stdout !== '', headSha };
  }

  /** The worktree and its merge base with the base ref, or 409 when there is none to compare. */
  private async comparison(requirementId: string): Promise<{ row: RequirementWorktreeEntity; mergeBase: string; head: string }> {
    const row = await this.repository.find(requirementId);
    if (row === null && (await this.requirements.find(requirementId)) === null) {
      throw notFound('requirement_not_found', `Requirement ${requirementId} not found`);
    }
    if (!row || row.isolation !== 'worktree' || row.path === null || row.removedAt !== null || row.createdAt === null) {
      throw noWorktree(requirementId);
    }
    // One git call for both ends (a read of the changes is a handful of processes, not a dozen).
    const ends = await git(['rev-parse', ...(row.baseRef !== null ? [`${row.baseRef}^{commit}`] : []), 'HEAD'], {
      cwd: row.path,
      okCodes: [0, 128],
      timeoutMs: QUICK_TIMEOUT_MS,
    }).catch(() => null);
    if (ends === null || !(await fs.stat(path.join(row.path, '.git')).catch(() => null))) {
      throw noWorktree(requirementId);
    }
    const shas = ends.stdout.trim().split('\n');
    const head = ends.code === 0 ? (shas[shas.length - 1] ?? null) : await this.workspace.resolveCommit(row.path, 'HEAD');
    // A base ref deleted since: its commit at creation.
    const base = ends.code === 0 && row.baseRef !== null ? (shas[0] ?? null) : row.baseSha;
    if (base === null || head === null) {
      throw conflict('no_base', `the base of Requirement ${requirementId}'s worktree is gone`);
    }
    const key = `${base}..${head}`;
    let mergeBase = this.mergeBases.get(key);
    if (mergeBase === undefined) {
      mergeBase = (await git(['merge-base', base, head], { cwd: row.path, okCodes: [0, 1], timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim() || base;
      // Commits never change: the answer holds for good (a few hundred entries at most).
      if (this.mergeBases.size > 1000) {
        this.mergeBases.clear();
      }
      this.mergeBases.set(key, mergeBase);
    }
    return { head, mergeBase, row };
  }

  /** A relative path that stays inside the worktree, symlinks resolved; anything else is a 400. */
  private insideWorktree(top: string, file: string): string {
    const outside = () => invalid('path_outside_worktree', `${file} is not a path inside the worktree`);
    const normalized = worktreeRelativePath(file);
    if (normalized === null) {
      throw outside();
    }
    const absolute = path.join(top, normalized);
    // A symlinked folder could lead out: the deepest existing parent must resolve inside.
    let probe = path.dirname(absolute);
    const realTop = realpathSync(top);
    for (;;) {
      let real: string;
      try {
        real = realpathSync(probe);
      } catch {
        probe = path.dirname(probe);
        continue;
      }
      if (!isInside(real, realTop)) {
        throw outside();
      }
      break;
    }
    return normalized;
  }
}
