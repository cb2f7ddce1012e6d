import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { Clock } from '../core/clock';
import { conflict } from '../core/errors/domain-error';
import { GitError, git } from '../core/git/git';
import { RUNTIME, Runtime } from '../core/runtime';
import { SYSTEM_ACTOR } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import {
  AgentRepositoryRefused,
  Snapshot,
  importBranch,
  inspectAgentRepository,
  prepareSnapshot,
  snapshotMessage,
  snapshotWork,
} from './agent-repository';
import { KeyedLock } from './keyed-lock';
import { QUICK_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';
import { WorktreeRecords } from './worktree-records.service';
import { WorktreesRepository } from './worktrees.repository';

/** The agent's work as the person's repository holds it after an import. */
export interface ImportedWork {
  row: RequirementWorktreeEntity;
  /** The Requirement's branch in the person's repository (null: it has none). */
  head: string | null;
  /** `head` with the working copy's uncommitted and untracked files on top (`head` when clean). */
  work: string | null;
  dirty: boolean;
  /** Why this import was refused (the figures are then those of the last one taken). */
  error: string | null;
}

const usable = (row: RequirementWorktreeEntity | null): row is RequirementWorktreeEntity =>
  row !== null && row.isolation === 'worktree' && row.branch !== null && row.createdAt !== null;

/**
 * Brings an agent's work into the person's repository (issue 44 §2): its branch fetched from the
 * agent's own repository (checked, one destination, nothing else of it trusted) and its
 * uncommitted files snapshotted as a commit on top, both in the person's repository, where
 * Changes, the radar, a land and a pull request's push read them. The row records what came
 * (head, work, dirty, ahead, behind) and why an import was refused. One import at a time per
 * Requirement; a fetch is skipped when the agent's refs are as the last one left them.
 */
@Injectable()
export class AgentWork {
  private readonly logger = new Logger(AgentWork.name);
  private readonly lock = new KeyedLock();
  /** What the agent's ref files were when its branch was last fetched, and the head that gave. */
  private readonly fetched = new Map<string, { stamp: string; head: string }>();
  /** The head each Requirement's snapshot index was last read onto. */
  private readonly indexHeads = new Map<string, string>();

  constructor(
    private readonly clock: Clock,
    private readonly records: WorktreeRecords,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** The manager's own index of a Requirement's working copy, in the data directory (hidden from agents). */
  snapshotIndex(requirementId: string): string {
    return path.join(this.runtime.paths.dataDirectory, 'agent-index', requirementId);
  }

  /** A working copy was removed or made anew: its snapshot index and what was known of it go. */
  async forget(requirementId: string): Promise<void> {
    this.forgetFetched(requirementId);
    await fs.rm(this.snapshotIndex(requirementId), { force: true });
  }

  /** The working copy's repository was replaced (a linked worktree converted): its refs are fetched afresh. */
  forgetFetched(requirementId: string): void {
    this.fetched.delete(requirementId);
    this.indexHeads.delete(requirementId);
  }

  /**
   * The working copy's files against the last head taken, without importing (what a removal saves
   * when the agent's repository refuses its import): nothing recorded.
   */
  snapshotOnRecorded(requirementId: string): Promise<{ head: string | null; work: string | null }> {
    return this.lock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (!usable(row) || row.path === null || row.headSha === null) {
        return { head: row?.headSha ?? null, work: row?.headSha ?? null };
      }
      const { git: dirs, repo } = await this.workspace.repositoryFacts();
      const snapshot = await this.snapshot(requirementId, row, row.headSha, repo.top, dirs.commonDir);
      return { head: row.headSha, work: snapshot.work };
    });
  }

  /** See prepareSnapshot; a failure here is the snapshot's to report (it runs the same `add`). */
  private async prepare(
    requirementId: string,
    row: RequirementWorktreeEntity,
    top: string,
    commonDir: string,
  ): Promise<void> {
    if (!(await fs.stat(this.snapshotIndex(requirementId)).catch(() => null))) {
      return; // no index yet: the snapshot reads the head into one first
    }
    await prepareSnapshot({
      index: this.snapshotIndex(requirementId),
      links: this.workspace.links(),
      personCommonDir: commonDir,
      personTop: top,
      top: row.path as string,
    }).catch(() => undefined);
  }

  private async snapshot(
    requirementId: string,
    row: RequirementWorktreeEntity,
    head: string,
    top: string,
    commonDir: string,
  ): Promise<Snapshot> {
    const title = (await this.requirements.find(requirementId))?.title ?? requirementId;
    const snapshot = await snapshotWork({
      head,
      index: this.snapshotIndex(requirementId),
      indexOnHead: this.indexHeads.get(requirementId) === head,
      links: this.workspace.links(),
      message: snapshotMessage(title, requirementId),
      personCommonDir: commonDir,
      personTop: top,
      top: row.path as string,
    });
    this.indexHeads.set(requirementId, head);
    return snapshot;
  }

  /**
   * Imports the Requirement's work now and records it (publishing the Requirement when its
   * figures changed and `publish`; `always`: even when they did not, with the time it was read). A Requirement without a working copy (swept, in place, not
   * started) answers with what was recorded.
   */
  bring(
    requirementId: string,
    publish = true,
    actor: EventActor = SYSTEM_ACTOR,
    always = false,
  ): Promise<ImportedWork> {
    return this.lock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (!usable(row) || row.path === null || row.removedAt !== null) {
        const recorded = row?.headSha ?? null;
        return { dirty: false, error: null, head: recorded, row: row as RequirementWorktreeEntity, work: recorded };
      }
      const { git: dirs, repo } = await this.workspace.repositoryFacts();
      const top = repo.top;
      const commonDir = dirs.commonDir;
      let head = row.headSha;
      let work = row.workSha ?? row.headSha;
      let dirty = Boolean(row.dirty);
      let error: string | null = null;
      try {
        if (row.layout !== 'own_repository') {
          head = await this.workspace.resolveCommit(top, `refs/heads/${row.branch}`);
        } else {
          const fetched = await this.fetchedHead(requirementId, row, top, commonDir);
          if ('head' in fetched) {
            head = fetched.head; // nothing new to fetch: the snapshot alone reads the files, once
          } else {
            // The files' hashing (what a snapshot costs) runs while the branch is fetched.
            const prepared = this.prepare(requirementId, row, top, commonDir);
            head = await importBranch(top, commonDir, row.path, row.branch as string);
            await prepared;
            if (head !== null) {
              this.fetched.set(requirementId, { head, stamp: fetched.stamp });
            }
          }
        }
        if (head === null) {
          throw new AgentRepositoryRefused(
            `the branch ${row.branch} no longer exists in the agent's repository; the last import (${(row.headSha ?? 'none').slice(0, 12)}) stands`,
          );
        }
        if (await fs.stat(row.path).catch(() => null)) {
          ({ dirty, work } = await this.snapshot(requirementId, row, head, top, commonDir));
        } else {
          ({ dirty, work } = { dirty: false, work: head });
        }
      } catch (err) {
        if (!(err instanceof AgentRepositoryRefused) && !(err instanceof GitError)) {
          throw err;
        }
        if ((await fs.stat(row.path).catch(() => null)) === null) {
          // Removed meanwhile (a cancel, a sweep): nothing was refused, there is just nothing left to read.
          throw conflict('no_worktree', `Requirement ${requirementId}'s working copy was removed`);
        }
        error = err.message;
        head = row.headSha;
        work = row.workSha ?? row.headSha;
        this.logger.warn({ error, msg: "the agent's work was not imported", requirementId });
      }
      const counts = head === null ? { ahead: row.ahead, behind: row.behind } : await this.aheadBehind(top, row, head);
      const next = { ...counts, dirty, headSha: head, importError: error, workSha: work };
      const changed = (Object.keys(next) as Array<keyof typeof next>).some((key) =>
        key === 'dirty' ? Boolean(row.dirty) !== dirty : row[key] !== next[key],
      );
      const saved =
        changed || always
          ? await this.records.save(requirementId, { ...next, refreshedAt: this.clock.nowIso() }, publish, actor)
          : row;
      return { dirty, error, head, row: saved, work };
    });
  }

  /**
   * The agent's repository inspected, and its branch as the last fetch brought it when the agent's
   * ref files are as that fetch left them and the person's branch still holds what it brought;
   * else the stamp to keep with the fetch that must follow (importBranch). The stamp is read before
   * the inspection and the fetch: a ref written meanwhile makes the next import fetch again.
   */
  private async fetchedHead(
    requirementId: string,
    row: RequirementWorktreeEntity,
    top: string,
    commonDir: string,
  ): Promise<{ head: string } | { stamp: string }> {
    const stamp = await refStamp(row);
    // Inspected every time (a few hundred entries at most): a FIFO planted since is refused and said
    // even when there is nothing new to fetch.
    await inspectAgentRepository(row.path as string, commonDir);
    const last = this.fetched.get(requirementId);
    if (
      last !== undefined &&
      last.stamp === stamp &&
      last.head === row.headSha &&
      (await this.workspace.resolveCommit(top, `refs/heads/${row.branch as string}`)) === last.head
    ) {
      return { head: last.head };
    }
    return { stamp };
  }

  /** Commits on the branch the base lacks, and the other way round, in the person's repository. */
  private async aheadBehind(
    top: string,
    row: RequirementWorktreeEntity,
    head: string,
  ): Promise<{ ahead: number; behind: number }> {
    const base = (row.baseRef !== null ? await this.workspace.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    if (base === null) {
      return { ahead: row.ahead, behind: row.behind };
    }
    const counts = await git(['rev-list', '--left-right', '--count', `${base}...${head}`], {
      cwd: top,
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const [behind, ahead] = counts.stdout.trim().split(/\s+/).map(Number);
    return { ahead: ahead || 0, behind: behind || 0 };
  }
}

/** The agent's branch's ref files as they are now (loose and packed): another stamp, another fetch. */
async function refStamp(row: RequirementWorktreeEntity): Promise<string> {
  const gitDir = path.join(row.path as string, '.git');
  const files = [path.join(gitDir, 'refs', 'heads', row.branch as string), path.join(gitDir, 'packed-refs')];
  return (await Promise.all(files.map(statStamp))).join('|');
}

/** A file's identity and times, or 'missing': a ref file rewritten or replaced gives another. */
async function statStamp(file: string): Promise<string> {
  const stat = await fs.lstat(file).catch(() => null);
  return stat === null ? 'missing' : `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
}
