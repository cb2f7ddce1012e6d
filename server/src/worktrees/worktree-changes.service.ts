import { Injectable } from '@nestjs/common';

import type { RequirementChanges } from '@libs/contracts';

import { DomainError, conflict, invalid, notFound } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import { RequirementsService } from '../requirements/requirements.service';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { isId } from '../core/ids';
import { AgentWork } from './agent-work.service';
import { CheckpointsRepository } from './checkpoints.repository';
import { RequirementCheckpointEntity } from './requirement-checkpoint.entity';
import { fileDiff, listChanges, worktreeRelativePath } from './worktree-changes';
import { QUICK_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';
import { WorktreesRepository } from './worktrees.repository';

/** A Requirement's changes as compared: the person's repository, the merge base and the agent's imported work. */
/** A range of a Requirement's checkpoints (ids): from one, to another or to now. */
export interface CheckpointRange {
  from?: string;
  to?: string;
}

export interface Comparison {
  top: string;
  baseRef: string | null;
  head: string;
  mergeBase: string;
  work: string;
}

function noWorktree(requirementId: string): DomainError {
  return conflict(
    'no_worktree',
    `Requirement ${requirementId} has no worktree (in place, not started yet, or removed)`,
  );
}

/**
 * What a Requirement's agent changed: the Changes tab's file list and diffs, from the merge base
 * with its base to its work as imported into the person's repository just before (its branch,
 * with its uncommitted and untracked files on top: AgentWork). Everything is read in the person's
 * repository, never in the agent's: what is shown is what a land takes (issue 44 §2).
 */
@Injectable()
export class WorktreeChanges {
  private readonly mergeBases = new Map<string, string>();

  constructor(
    private readonly agentWork: AgentWork,
    private readonly checkpoints: CheckpointsRepository,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /**
   * GET /requirements/:id/changes: from the merge base to the agent's work now; with a range, from
   * one checkpoint to another (or to now) — what one run changed (`mergeBaseSha` is then `from`'s commit).
   */
  async changes(requirementId: string, range: CheckpointRange = {}): Promise<RequirementChanges> {
    const { baseRef, head, mergeBase, top, work } = await this.ranged(requirementId, range);
    const listed = await listChanges(top, mergeBase, work);
    return {
      baseRef: baseRef ?? mergeBase,
      files: listed.files.map(({ blob, ...file }) => (void blob, file)),
      headSha: head,
      mergeBaseSha: mergeBase,
      truncated: listed.truncated,
      workSha: work,
    };
  }

  /** GET /requirements/:id/changes/diff: a path that is no path inside the repository is refused. */
  async diff(
    requirementId: string,
    file: string,
    oldPath: string | null,
    range: CheckpointRange = {},
  ): Promise<{ diff: string; truncated: boolean }> {
    const checked = [file, ...(oldPath === null ? [] : [oldPath])].map((p) => {
      const normalized = worktreeRelativePath(p);
      if (normalized === null) {
        throw invalid('path_outside_worktree', `${p} is not a path inside the worktree`);
      }
      return normalized;
    });
    const { mergeBase, top, work } = await this.ranged(requirementId, range);
    return fileDiff(top, mergeBase, work, checked[0], checked[1] ?? null);
  }

  /** The comparison, or the range of checkpoints asked for (404 for one that is not the Requirement's). */
  private async ranged(requirementId: string, range: CheckpointRange): Promise<Comparison> {
    if (range.to !== undefined && range.from === undefined) {
      throw invalid('range_without_from', '`to` needs `from` (a checkpoint to compare from)');
    }
    // Between two checkpoints nothing of now is read: no import while a run is at work.
    const compared = await this.comparison(requirementId, range.to !== undefined);
    if (range.from === undefined) {
      return compared;
    }
    const from = await this.checkpoint(requirementId, range.from);
    const to = range.to === undefined ? null : await this.checkpoint(requirementId, range.to);
    return {
      ...compared,
      head: to?.head ?? compared.head,
      mergeBase: from.commit,
      work: to?.commit ?? compared.work,
    };
  }

  private async checkpoint(requirementId: string, id: string): Promise<RequirementCheckpointEntity> {
    const row = isId('checkpoint', id) ? await this.checkpoints.find(requirementId, id) : null;
    if (!row) {
      throw notFound('checkpoint_not_found', `Checkpoint ${id} not found`);
    }
    return row;
  }

  /**
   * The agent's work as the person's repository has it: imported now while a run is at work (or
   * when no import followed its last run), else what the import after its last run brought — a
   * resting working copy changes only by its next run (or a refresh, after a person's own edit).
   * `recorded`: what the last import brought, whatever the session does (a reaction to that import).
   */
  private async current(
    requirementId: string,
    row: RequirementWorktreeEntity,
    recorded: boolean,
  ): Promise<{ head: string | null; work: string | null }> {
    if (recorded) {
      return { head: row.headSha, work: row.workSha ?? row.headSha };
    }
    const resting = (await this.requirements.find(requirementId))?.session.state !== 'running';
    // Only an import of an own repository counts: a linked worktree of before has never been snapshotted.
    const imported =
      row.layout === 'own_repository' &&
      row.workSha !== null &&
      row.refreshedAt !== null &&
      row.refreshedAt >= (row.lastRunAt ?? '') &&
      row.importError === null;
    if (resting && imported && row.headSha !== null) {
      return { head: row.headSha, work: row.workSha ?? row.headSha };
    }
    return this.agentWork.bring(requirementId);
  }

  /**
   * The imported work and its merge base with the base ref, or 409 when there is nothing to
   * compare; `recorded`: as the last import left it, without importing (see current).
   */
  async comparison(requirementId: string, recorded = false): Promise<Comparison> {
    const row = await this.repository.find(requirementId);
    if (row === null && (await this.requirements.find(requirementId)) === null) {
      throw notFound('requirement_not_found', `Requirement ${requirementId} not found`);
    }
    if (!row || row.isolation !== 'worktree' || row.path === null || row.removedAt !== null || row.createdAt === null) {
      throw noWorktree(requirementId);
    }
    const imported = await this.current(requirementId, row, recorded);
    const { repo } = await this.workspace.repositoryFacts();
    // A base ref deleted since: its commit at creation.
    const base =
      (row.baseRef !== null ? await this.workspace.resolveCommit(repo.top, row.baseRef) : null) ?? row.baseSha;
    if (imported.head === null || imported.work === null) {
      throw noWorktree(requirementId);
    }
    if (base === null) {
      throw conflict('no_base', `the base of Requirement ${requirementId}'s worktree is gone`);
    }
    const key = `${base}..${imported.head}`;
    let mergeBase = this.mergeBases.get(key);
    if (mergeBase === undefined) {
      mergeBase =
        (
          await git(['merge-base', base, imported.head], {
            cwd: repo.top,
            okCodes: [0, 1],
            timeoutMs: QUICK_TIMEOUT_MS,
          })
        ).stdout.trim() || base;
      // Commits never change: the answer holds for good (a few hundred entries at most).
      if (this.mergeBases.size > 1000) {
        this.mergeBases.clear();
      }
      this.mergeBases.set(key, mergeBase);
    }
    return { baseRef: row.baseRef, head: imported.head, mergeBase, top: repo.top, work: imported.work };
  }
}
