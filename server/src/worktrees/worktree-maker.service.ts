import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Inject, Injectable } from '@nestjs/common';

import type { NormalizedTrace } from '../agents/agent-adapter';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import { RUNTIME, Runtime } from '../core/runtime';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { RequirementsService } from '../requirements/requirements.service';
import { adoptPooledRepository, createAgentRepository } from './agent-repository';
import { AgentWork } from './agent-work.service';
import { convertLinkedWorktree } from './linked-worktree-conversion';
import { provideFiles } from './worktree-files';
import { type PooledCopy, poolIndexPath } from './worktree-pool-manifest';
import { WorktreePool } from './worktree-pool.service';
import { WorktreeRecords } from './worktree-records.service';
import {
  CREATE_TIMEOUT_MS,
  GitDirectories,
  GitWorkspace,
  QUICK_TIMEOUT_MS,
  WorkspaceGit,
} from './workspace-git.service';

/** What a run's trace says of its working copy. */
export const lifecycle = (
  title: string,
  detail: string | null,
  status: NormalizedTrace['status'] = 'completed',
): NormalizedTrace => ({
  detail,
  kind: status === 'failed' ? 'error' : 'lifecycle',
  nativeType: 'worktree',
  status,
  title,
  toolCallId: null,
  toolName: null,
});

export type Trace = (trace: NormalizedTrace) => void;

/** What a new working copy is made of (ensureWorktree's choices). */
interface Making {
  requirementId: string;
  facts: { repo: GitWorkspace; git: GitDirectories };
  baseRef: string;
  baseSha: string;
  branch: string;
  start: string;
  target: string;
  /** git-lfs settings. */
  env: Record<string, string>;
  /** When the making began (Date.now()), for the trace. */
  started: number;
}

/** A working copy ready for a run, and the commit it holds exactly when it was made just now. */
export interface MadeWorktree {
  row: RequirementWorktreeEntity;
  exactly: string | null;
}

/** `agent/<slug>-<8 hex>`: readable in `git branch`, unique by its suffix. */
export function branchName(title: string): string {
  const slug =
    title
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40)
      .replace(/-+$/, '') || 'requirement';
  return `agent/${slug}-${randomBytes(4).toString('hex')}`;
}

/**
 * Makes a Requirement's working copy (issue 44): an agent repository of its own, taken from the
 * pool of prepared copies when one matches (issue 48 §6), or a linked worktree of before turned
 * into one. WorktreesService calls it under the Requirement's lock, before a run.
 */
@Injectable()
export class WorktreeMaker {
  constructor(
    private readonly agentWork: AgentWork,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly pool: WorktreePool,
    private readonly records: WorktreeRecords,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly workspace: WorkspaceGit,
  ) {}

  /**
   * The Requirement's working copy, made the first time (an own repository, issue 44), made again
   * after a removal, or turned from a linked worktree of before into an own repository.
   */
  async ensure(
    facts: { repo: GitWorkspace; git: GitDirectories },
    row: RequirementWorktreeEntity,
    trace: Trace,
  ): Promise<MadeWorktree> {
    const { repo } = facts;
    if (row.path !== null && row.createdAt !== null && row.removedAt === null) {
      const dotGit = await fs.lstat(path.join(row.path, '.git')).catch(() => null);
      if (dotGit?.isDirectory() && row.layout === 'own_repository') {
        return { exactly: null, row };
      }
      if (row.branch !== null && (dotGit?.isFile() || dotGit === null) && (await this.convert(facts, row, trace))) {
        return { exactly: null, row: await this.records.save(row.requirementId, { layout: 'own_repository' }, true) };
      }
    }
    const requirementId = row.requirementId;
    const reopening = row.removedAt !== null || row.createdAt !== null;
    const target =
      row.path !== null && row.removedAt === null ? row.path : await this.records.choosePath(requirementId);
    if (this.records.insideDataDirectory(target)) {
      throw invalid(
        'worktree_root_hidden',
        `the worktree root ${path.dirname(target)} is inside Agent Manager's data directory, which agents cannot see; set worktreeRoot elsewhere`,
      );
    }
    let branch = row.branch;
    const branchHead = branch === null ? null : await this.workspace.resolveCommit(repo.top, `refs/heads/${branch}`);
    if (branch !== null && branchHead === null && row.createdAt !== null) {
      // Deleted since (merged, or by hand): a new one from the base.
      branch = null;
    }
    const baseRef = row.baseRef ?? repo.branch ?? repo.head;
    // Asked while a branch name is chosen (awaited below; a failure meanwhile is not left unhandled).
    const baseCommit = this.workspace.resolveCommit(repo.top, baseRef);
    baseCommit.catch(() => undefined);
    const title = (await this.requirements.find(requirementId))?.title ?? 'requirement';
    for (let attempt = 0; branch === null && attempt < 10; attempt += 1) {
      const candidate = branchName(title);
      if (!(await this.workspace.branchExists(repo.top, candidate))) {
        branch = candidate;
      }
    }
    if (branch === null) {
      throw new Error('no free branch name after 10 tries');
    }
    const baseSha = (await baseCommit) ?? row.baseSha;
    if (baseSha === null) {
      throw invalid('unknown_base_ref', `the base ref ${baseRef} no longer exists in the repository`);
    }
    const subdirectory = row.subdirectory ?? this.records.subdirectory(repo);
    // A copy prepared at this very base (issue 48 §6): its files, links and setup are done. It
    // keeps its folder: what its setup wrote may name it.
    const pooled = branchHead === null ? await this.pool.take({ ref: baseRef, sha: baseSha, subdirectory }) : null;
    const place = pooled?.path ?? target;
    // Recorded before git runs: a crash from here on leaves a row that says what to clear.
    try {
      await this.records.save(
        requirementId,
        {
          baseRef,
          branch,
          createdAt: null,
          layout: 'own_repository',
          path: place,
          removedAt: null,
          setupAt: null,
          subdirectory,
        },
        false,
      );
    } finally {
      // The row names it now (or never will: then it is an orphan for the next start's sweep).
      if (pooled !== null) {
        this.pool.handedOver(pooled);
      }
    }
    const started = Date.now();
    const env = await this.workspace.lfsEnvironment(repo.top);
    const start = branchHead ?? baseSha;
    await fs.mkdir(path.dirname(target), { recursive: true });
    // What a creation cut short left there, or what an agent made of it (never a copy just taken: its folder is new).
    await fs.rm(target, { force: true, recursive: true });
    await this.agentWork.forget(requirementId);
    // The person's repository has the branch from the start (the person sees it, names stay unique);
    // only the manager moves it from now on, importing what the agent commits. Made while the
    // agent's repository is.
    const personBranch = this.workspace.inRepository(repo.top, async () => {
      if (branchHead === null) {
        await git(
          ['update-ref', '-m', "agent-manager: the Requirement's branch", `refs/heads/${branch}`, baseSha, ''],
          { cwd: repo.top, timeoutMs: QUICK_TIMEOUT_MS },
        );
      }
    });
    personBranch.catch(() => undefined);
    const making: Making = { baseRef, baseSha, branch, env, facts, requirementId, start, started, target };
    let exactly: string | null = null;
    if (pooled !== null) {
      await this.adoptPooled(making, pooled);
      await personBranch;
      trace(
        lifecycle(
          `Took the prepared worktree ${place} on ${branch} (a repository of the agent's own)`,
          `base ${baseRef} (${baseSha.slice(0, 12)}), prepared at ${pooled.madeAt}, its setup done then; ${Date.now() - started} ms`,
        ),
      );
    } else {
      exactly = await this.makeRepository(making, personBranch, reopening, trace);
    }
    this.workspace.forgetDiskUsage();
    const made = await this.records.save(
      requirementId,
      {
        baseSha: branchHead !== null ? (row.baseSha ?? baseSha) : baseSha,
        createdAt: this.clock.nowIso(),
        dirty: false,
        headSha: start,
        importError: null,
        // A prepared copy's setup ran when it was prepared: the run does not run it again.
        ...(pooled !== null ? { setupAt: pooled.setupAt ?? pooled.madeAt } : {}),
        workSha: start,
      },
      true,
    );
    return { exactly, row: made };
  }

  /** A prepared copy (issue 48 §6) becomes the Requirement's: its branch written in, the manager's index of it moved over. */
  private async adoptPooled(making: Making, pooled: PooledCopy): Promise<void> {
    await adoptPooledRepository(pooled.path, making.facts.git.commonDir, {
      branch: making.branch,
      start: making.start,
    });
    const index = this.agentWork.snapshotIndex(making.requirementId);
    await fs.mkdir(path.dirname(index), { mode: 0o700, recursive: true });
    // Without it the first snapshot hashes every file once: slower, never wrong.
    await fs.rename(poolIndexPath(this.runtime.paths.dataDirectory, pooled.id), index).catch(() => undefined);
  }

  /**
   * A new agent repository with its files, submodules, included files and links; resolves with
   * the commit it holds exactly (null: more than the commit's files are there).
   */
  private async makeRepository(
    making: Making,
    personBranch: Promise<void>,
    reopening: boolean,
    trace: Trace,
  ): Promise<string | null> {
    const { baseRef, baseSha, branch, env, facts, start, started, target } = making;
    const baseBranchSha =
      baseRef === branch ? null : await this.workspace.resolveCommit(facts.repo.top, `refs/heads/${baseRef}`);
    await createAgentRepository({
      base: baseBranchSha === null ? null : { ref: baseRef, sha: baseBranchSha },
      branch,
      env,
      personCommonDir: facts.git.commonDir,
      personTop: facts.repo.top,
      snapshotIndex: this.agentWork.snapshotIndex(making.requirementId),
      start,
      target,
    });
    await personBranch;
    const submodules = await fs.stat(path.join(target, '.gitmodules')).catch(() => null);
    if (submodules) {
      await git(['submodule', 'update', '--init', '--recursive'], { cwd: target, env, timeoutMs: CREATE_TIMEOUT_MS });
    }
    const files = await provideFiles(facts.repo.top, target, this.configuration.get('worktreeLinks'));
    const lfsNote = env.GIT_LFS_SKIP_SMUDGE ? '\ngit-lfs is not installed: LFS files are left as pointer files.' : '';
    trace(
      lifecycle(
        `${reopening ? 'Recreated' : 'Created'} worktree ${target} on ${branch} (a repository of the agent's own)`,
        `base ${baseRef} (${baseSha.slice(0, 12)}), ${Date.now() - started} ms` +
          (files.linked.length > 0 ? `\nlinked: ${files.linked.join(', ')}` : '') +
          (files.copied.length > 0 ? `\ncopied: ${files.copied.join(', ')}` : '') +
          lfsNote,
      ),
    );
    // Submodules and copied files are more than the commit's files (links are never the agent's work).
    return submodules === null && files.copied.length === 0 ? start : null;
  }

  /** A linked worktree of before issue 44 becomes an own repository in place (linked-worktree-conversion.ts). */
  private async convert(
    facts: { repo: GitWorkspace; git: GitDirectories },
    row: RequirementWorktreeEntity,
    trace: Trace,
  ): Promise<boolean> {
    const branch = row.branch as string;
    const head = await this.workspace.resolveCommit(facts.repo.top, `refs/heads/${branch}`);
    if (head === null) {
      return false;
    }
    const baseSha =
      row.baseRef === null || row.baseRef === branch
        ? null
        : await this.workspace.resolveCommit(facts.repo.top, `refs/heads/${row.baseRef}`);
    const converted = await this.workspace.inRepository(facts.repo.top, () =>
      convertLinkedWorktree({
        base: baseSha === null ? null : { ref: row.baseRef as string, sha: baseSha },
        branch,
        head,
        personCommonDir: facts.git.commonDir,
        personTop: facts.repo.top,
        snapshotIndex: this.agentWork.snapshotIndex(row.requirementId),
        target: row.path as string,
      }),
    );
    if (converted) {
      await this.agentWork.forgetFetched(row.requirementId);
      trace(
        lifecycle(
          `The worktree ${row.path} is now a repository of the agent's own`,
          `on ${branch} (${head.slice(0, 12)}); your repository's objects are borrowed read-only`,
        ),
      );
    }
    return converted;
  }
}
