import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import type { RdWorkPlace } from '../agents/prompt';
import { AgentSandbox } from '../agents/agent-sandbox';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { OnDomainEvent } from '../core/domain-events';
import { conflict, invalid } from '../core/errors/domain-error';
import { SecretsService } from '../core/secrets/secrets.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { SYSTEM_ACTOR } from '../events/event-log.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { GitError, git, gitSucceeds } from '../core/git/git';
import type { SandboxGit } from '../agents/sandbox-layout';
import type { RunCaps } from '../agents/run-limits';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { RequirementRows } from '../requirements/requirements.repository';
import { followInAgentRepository, refreshBase } from './agent-repository';
import { AgentWork, ImportedWork } from './agent-work.service';
import { KeyedLock } from './keyed-lock';
import { linkedEntry } from './linked-worktree-conversion';
import { RequirementWorktreeEntity, WORKTREE_PORT_BLOCK } from '../requirements/requirement-worktree.entity';
import { type HookContext, runHook } from './worktree-commands';
import { type Trace, WorktreeMaker, lifecycle } from './worktree-maker.service';
import { WorktreeRecords } from './worktree-records.service';
import {
  CREATE_TIMEOUT_MS,
  GitDirectories,
  GitWorkspace,
  QUICK_TIMEOUT_MS,
  WorkspaceGit,
} from './workspace-git.service';
import { WorktreesRepository } from './worktrees.repository';

/** Where an RD run works, what its environment says about it, and what its instructions do. */
export interface RunPlace {
  cwd: string;
  env: Record<string, string>;
  /** The tree the agent may write: its worktree's top, or the checkout in place. */
  workTree: string;
  /** What of git the sandbox must know: the agent's own repository, or the person's in place; null outside a repository. */
  git: SandboxGit | null;
  place: RdWorkPlace;
  /**
   * The commit whose files the working copy holds exactly when it was made for this run and
   * nothing has run in it yet (no setup command, no submodules, no copied files); else null. Its
   * start checkpoint is that commit, without an import that would hash every file.
   */
  untouchedAt: string | null;
}

/** Where a Requirement's preview runs (issue 48 §2): its working copy as it is, and the run's variables. */
export interface PreviewPlace {
  cwd: string;
  workTree: string;
  git: SandboxGit | null;
  env: Record<string, string>;
  /** Its reserved ports. */
  ports: { first: number; count: number };
  /** Where the repository's run script is read: the person's repository at their base (never the agent's branch). */
  script: { repository: string; ref: string } | null;
}

/** The run a worktree is prepared for: its marker, its private temporary directory, and its stop. */
export interface RunPreparation {
  marker: string;
  tmp: string | null;
  signal: AbortSignal;
  /** The run's limits: its setup command counts as the run. */
  caps: RunCaps | null;
  /** The run's network (issue 45): its setup command reaches what the run reaches. */
  network: HookContext['network'];
}

/** A remote to push to or fetch from, and the environment its access needs (a token's header, ssh in batch mode). */
export interface RemoteAccess {
  name: string;
  env: Record<string, string>;
}

/** What a move fetched of the Requirement's branch (see fetchForMove). */
export interface MovedBranch {
  branch: string | null;
  fetched: string | null;
  reason: string | null;
}

/** A push or fetch of one branch over the network. */
const REMOTE_TIMEOUT_MS = 5 * 60_000;

/**
 * The lifecycle of a Requirement's git worktree and branch (issue 14): made on the first run
 * (WorktreeMaker),
 * refreshed after each run, removed when the Requirement is purged, cancelled or idle. Where it
 * is chosen and how its row changes is WorktreeRecords'; the workspace's git facts and the
 * repository lock are WorkspaceGit's; what it changed is WorktreeChanges'. Git runs through
 * `git()` (no shell, time-limited, bounded); changes to the repository's worktree list are
 * serialized per repository, a worktree's own work (prepare, refresh, remove) per Requirement.
 */
@Injectable()
export class WorktreesService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(WorktreesService.name);
  /** Everything done to one Requirement's worktree, one at a time. */
  private readonly requirementLock = new KeyedLock();
  /** Aborted when the manager stops: ends teardown commands in flight. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly agentWork: AgentWork,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly maker: WorktreeMaker,
    private readonly records: WorktreeRecords,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly sandbox: AgentSandbox,
    private readonly secrets: SecretsService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** A teardown still running when the manager stops is ended with it (it carries its own marker). */
  beforeApplicationShutdown(): void {
    this.shutdown.abort();
  }

  /**
   * Before an RD run: its working directory (creating the worktree, its files and its setup the
   * first time, or again after a removal) and the AGENT_MANAGER_* variables. Throws when the run
   * cannot start there; the caller fails the run with nothing consumed.
   */
  prepareRun(requirementId: string, trace: Trace, run: RunPreparation): Promise<RunPlace> {
    return this.requirementLock.run(requirementId, async () => {
      const row = await this.records.findOrAdopt(requirementId);
      const portBase = row.portBase ?? (await this.records.reservePorts(requirementId));
      const root = this.runtime.paths.root;
      const now = this.clock.nowIso();
      if (row.isolation === 'in_place') {
        const { git: rootGit, repo } = await this.workspace.inPlaceFacts();
        // No event of its own: the run's end carries the Requirement with it (in place nothing else changes).
        await this.records.save(requirementId, { lastRunAt: now, path: root }, false);
        return {
          cwd: root,
          env: this.records.environment({ baseRef: '', branch: repo?.branch ?? '', port: portBase, worktree: root }),
          git: rootGit === null ? null : { commonDir: rootGit.commonDir, gitDir: rootGit.gitDir, kind: 'shared' },
          place: {
            branch: repo?.branch ?? null,
            cwd: root,
            mode: 'in_place',
            reason: repo === null ? 'not_git' : 'chosen',
          },
          untouchedAt: null,
          workTree: root,
        };
      }
      // Never in place instead: a git that fails, or a repository that seems gone, is a 503 (issue 44 §4).
      const facts = await this.workspace.repositoryFacts();
      const { exactly, row: ready } = await this.maker.ensure(facts, { ...row, portBase }, trace);
      const top = ready.path as string;
      await this.refreshAgentBase(facts, ready, trace);
      const cwd = path.join(top, ready.subdirectory ?? '');
      await fs.mkdir(cwd, { recursive: true });
      const env = {
        ...this.records.environment({
          baseRef: ready.baseRef ?? '',
          branch: ready.branch ?? '',
          port: portBase,
          worktree: top,
        }),
        ...(await this.workspace.lfsEnvironment(facts.repo.top)),
      };
      const git: SandboxGit = { kind: 'own', personCommonDir: facts.git.commonDir };
      let setupAt: string | null = null;
      let untouchedAt: string | null = null;
      if (ready.setupAt === null) {
        const result = await runHook(this.sandbox, 'setup', this.configuration.get('worktreeSetupCommand'), {
          caps: run.caps,
          cwd,
          env,
          git,
          marker: run.marker,
          network: run.network,
          pass: this.configuration.get('agentEnvironmentPass'),
          personCheckout: facts.repo.top,
          secrets: this.secrets.environment(),
          untouched: () => this.atBase(top, ready.baseSha),
          signal: run.signal,
          tmp: run.tmp,
          worktree: top,
        });
        if (result.command !== null) {
          trace(
            lifecycle(
              `Worktree setup: ${result.command}${result.ok ? '' : ` ${result.failure}`}`,
              result.output || null,
              result.ok ? 'completed' : 'failed',
            ),
          );
        }
        if (!result.ok) {
          throw invalid('worktree_setup_failed', `the worktree setup command (${result.command}) ${result.failure}`);
        }
        setupAt = this.clock.nowIso();
        untouchedAt = result.command === null ? exactly : null;
      }
      // One write for both.
      await this.records.save(
        requirementId,
        setupAt === null ? { lastRunAt: now } : { lastRunAt: now, setupAt },
        false,
      );
      return {
        cwd,
        env,
        git,
        place: {
          baseRef: ready.baseRef,
          baseSha: ready.baseSha,
          branch: ready.branch ?? '',
          checkout: root,
          cwd,
          mode: 'worktree',
          worktree: top,
        },
        workTree: top,
        untouchedAt,
      };
    });
  }

  /**
   * Before a run: the agent's copy of its base branch at the base's commit in the person's
   * repository (what "rebase onto the base" means). Only where the base is a local branch; an
   * agent repository that fails the inspection fails the run (it would not be imported either).
   */
  private async refreshAgentBase(
    facts: { repo: GitWorkspace; git: GitDirectories },
    row: RequirementWorktreeEntity,
    trace: Trace,
  ): Promise<void> {
    if (row.baseRef === null || row.baseRef === row.branch) {
      return;
    }
    const sha = await this.workspace.resolveCommit(facts.repo.top, `refs/heads/${row.baseRef}`);
    if (sha !== null && row.layout === 'own_repository') {
      await refreshBase(row.path as string, facts.git.commonDir, { ref: row.baseRef, sha }).catch((err: unknown) => {
        // Its own repository, its own problem: the run goes on (and may repair it); its work is not imported meanwhile.
        trace(
          lifecycle(
            `The base ${row.baseRef} could not be brought up to date in the agent's repository`,
            (err as Error).message,
            'failed',
          ),
        );
      });
    }
  }

  /**
   * Runs `body` while nothing else is done to the Requirement's worktree (no run is prepared, no
   * refresh or removal runs): a land reads and moves its branch inside.
   */
  whileHeld<T>(requirementId: string, body: () => Promise<T>): Promise<T> {
    return this.requirementLock.run(requirementId, body);
  }

  /**
   * After a run (and on demand): the agent's work imported into the person's repository (its
   * branch, its uncommitted files as a snapshot commit) and published with the Requirement.
   */
  refresh(
    requirementId: string,
    actor: EventActor = SYSTEM_ACTOR,
    then?: (imported: ImportedWork) => Promise<void>,
  ): Promise<RequirementWorktreeEntity | null> {
    return this.requirementLock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (
        !row ||
        row.isolation !== 'worktree' ||
        row.path === null ||
        row.removedAt !== null ||
        row.createdAt === null
      ) {
        return row;
      }
      try {
        const imported = await this.agentWork.bring(requirementId, true, actor, true);
        // Still held: what follows an import (a run's end checkpoint) is taken before the next run prepares.
        await then?.(imported);
        return imported.row;
      } catch (err) {
        this.logger.warn(`could not import the work of ${requirementId} from ${row.path}: ${(err as Error).message}`);
        return row;
      }
    });
  }

  /** The Requirement's working copy as recorded (null: it never had one). */
  recorded(requirementId: string): Promise<RequirementWorktreeEntity | null> {
    return this.repository.find(requirementId);
  }

  /**
   * Where a preview of the Requirement runs: the working copy its runs made (none is made for a
   * preview), or null when it has none now. Not under the Requirement's lock: a preview may start
   * while a run prepares or works, and reads nothing the lock guards but the row.
   */
  async previewPlace(requirementId: string): Promise<PreviewPlace | null> {
    const row = await this.repository.find(requirementId);
    if (row === null || row.path === null || row.portBase === null || row.removedAt !== null) {
      return null;
    }
    const top = row.path;
    if (
      !(await fs.stat(top).then(
        (stat) => stat.isDirectory(),
        () => false,
      ))
    ) {
      return null;
    }
    const ports = { count: WORKTREE_PORT_BLOCK, first: row.portBase };
    if (row.isolation === 'in_place') {
      const { git: rootGit, repo } = await this.workspace.inPlaceFacts();
      return {
        cwd: top,
        env: this.records.environment({ baseRef: '', branch: repo?.branch ?? '', port: row.portBase, worktree: top }),
        git: rootGit === null ? null : { commonDir: rootGit.commonDir, gitDir: rootGit.gitDir, kind: 'shared' },
        ports,
        workTree: top,
        // In place the person's checkout is the agent's: its committed HEAD is what there is.
        script: repo === null ? null : { ref: 'HEAD', repository: repo.top },
      };
    }
    const facts = await this.workspace.repositoryFacts();
    return {
      cwd: path.join(top, row.subdirectory ?? ''),
      env: {
        ...this.records.environment({
          baseRef: row.baseRef ?? '',
          branch: row.branch ?? '',
          port: row.portBase,
          worktree: top,
        }),
        ...(await this.workspace.lfsEnvironment(facts.repo.top)),
      },
      git: { kind: 'own', personCommonDir: facts.git.commonDir },
      ports,
      workTree: top,
      script: row.baseRef ? { ref: row.baseRef, repository: facts.repo.top } : null,
    };
  }

  /**
   * The working copy something the person starts there now runs in (a preview, a terminal), with
   * its Requirement. Refused (409) for another runner's Requirement, a closed one, or one with no
   * working copy now.
   */
  async openPlace(requirementId: string): Promise<{ requirement: RequirementResponseDto; place: PreviewPlace }> {
    const requirement = await this.requirements.get(requirementId);
    const own = this.runtime.board?.runnerId ?? null;
    if (own !== null && requirement.runner !== null && requirement.runner.id !== own) {
      throw conflict(
        'runs_on_other_runner',
        `Requirement ${requirementId} works on another runner's machine; use it there`,
      );
    }
    if (requirement.status === 'done' || requirement.status === 'cancelled') {
      throw conflict('requirement_closed', `Requirement ${requirementId} is ${requirement.status}`);
    }
    const place = await this.previewPlace(requirementId);
    if (place === null) {
      throw conflict('no_worktree', `Requirement ${requirementId} has no working copy now (its next run makes one)`);
    }
    return { place, requirement };
  }

  /** The person's repository's top, or null when the workspace is none now. */
  async personTop(): Promise<string | null> {
    return (await this.workspace.gitWorkspace())?.top ?? null;
  }

  /**
   * The agent's work imported now (what a land, a pull request, a queued land or the agent's own
   * radar question take; a land holds the Requirement, no run active).
   */
  importWork(requirementId: string): Promise<ImportedWork> {
    return this.agentWork.bring(requirementId);
  }

  /**
   * A land's `commitPending`: the snapshot of the uncommitted work becomes the branch's commit in
   * the person's repository (moved only from the head just imported), and the agent's branch takes
   * the same commit with its files as they are, so that nothing it has is lost or imported back
   * over it. The caller holds the Requirement.
   */
  async commitPending(requirementId: string, imported: ImportedWork): Promise<string> {
    const { head, work, row } = imported;
    if (head === null || work === null || !imported.dirty) {
      return head as string;
    }
    const { git: dirs, repo } = await this.workspace.repositoryFacts();
    if (row.layout === 'own_repository' && row.path !== null && row.removedAt === null) {
      await followInAgentRepository(row.path, dirs.commonDir, { absorb: work, head, to: null });
    } else if (row.path !== null && row.removedAt === null) {
      // A linked worktree (before its first run since issue 44): its index takes the snapshot too.
      await git(['reset', '-q', '--mixed', work], { cwd: row.path, timeoutMs: QUICK_TIMEOUT_MS * 10 });
    }
    if (
      !(await gitSucceeds(
        ['update-ref', '-m', 'agent-manager: commit pending work', `refs/heads/${row.branch}`, work, head],
        { cwd: repo.top, timeoutMs: QUICK_TIMEOUT_MS },
      ))
    ) {
      throw conflict(
        'head_moved',
        `the branch ${row.branch} moved while its pending work was being committed: look at its changes again, then land`,
      );
    }
    await this.records.save(requirementId, { dirty: false, headSha: work, workSha: work }, true);
    return work;
  }

  /**
   * After a squash or rebase land: the branch points at what landed, so that it reads as merged
   * and later work continues from the landed base — in the agent's repository first (`reset
   * --keep`, refusing rather than losing anything, and only if it still has the head that
   * landed), then in the person's (compare-and-swap). The caller holds the Requirement.
   */
  async followLand(requirementId: string, head: string, landed: string): Promise<void> {
    const row = await this.repository.find(requirementId);
    if (!row || row.branch === null) {
      return;
    }
    const { git: dirs, repo } = await this.workspace.repositoryFacts();
    const present = row.path !== null && row.removedAt === null && (await fs.stat(row.path).catch(() => null)) !== null;
    if (present && row.layout === 'own_repository') {
      if (!(await followInAgentRepository(row.path as string, dirs.commonDir, { absorb: null, head, to: landed }))) {
        this.logger.warn(
          `the branch ${row.branch} moved in the agent's repository while it was being landed; it stays where it is`,
        );
        return;
      }
    } else if (present && (await linkedEntry(row.path as string, dirs.commonDir)) !== null) {
      if ((await this.workspace.resolveCommit(row.path as string, 'HEAD')) !== head) {
        this.logger.warn(`the branch ${row.branch} moved while it was being landed; it stays where it is`);
        return;
      }
      await git(['reset', '-q', '--keep', landed], { cwd: row.path as string, timeoutMs: 5 * 60_000 });
      await this.agentWork.bring(requirementId);
      return;
    }
    if (
      await gitSucceeds(
        ['update-ref', '-m', 'agent-manager: follow the land', `refs/heads/${row.branch}`, landed, head],
        { cwd: repo.top, timeoutMs: QUICK_TIMEOUT_MS },
      )
    ) {
      await this.records.save(requirementId, { headSha: landed, workSha: landed }, false);
    }
  }

  /**
   * A cancel loses nothing: once its run is gone, the worktree's uncommitted and untracked work is
   * saved as a patch beside the Requirement's records, then the worktree is removed.
   */
  @OnDomainEvent('requirement.cancelSettled')
  async cancelSettled(requirementId: string): Promise<void> {
    await this.saveAndRemove(requirementId, 'cancelled');
  }

  /**
   * Removes a Requirement's worktree, saving its uncommitted and untracked work as a patch first
   * (in the data directory, beside the Requirement's records): what a cancel calls. Its branch
   * stays unless merged into the base or without commits of its own. Refused while a run is active.
   */
  saveAndRemove(requirementId: string, reason: string): Promise<{ patch: string | null; branchDeleted: boolean }> {
    return this.requirementLock.run(requirementId, async () => {
      const requirement = await this.requirements.find(requirementId);
      if (requirement?.session.state === 'running') {
        throw conflict('run_active', `Requirement ${requirementId} has an active run; its worktree stays`);
      }
      const row = await this.repository.find(requirementId);
      if (!row || row.isolation !== 'worktree' || row.path === null || row.removedAt !== null) {
        return { branchDeleted: false, patch: null };
      }
      const outcome = await this.removeWorktree(row, reason);
      await this.records.save(
        requirementId,
        {
          branch: outcome.branchDeleted ? null : row.branch,
          dirty: false,
          portBase: null,
          removedAt: this.clock.nowIso(),
          setupAt: null,
        },
        requirement !== null,
      );
      return outcome;
    });
  }

  /**
   * Team mode: the Requirement's branch to the board's shared remote after a run (never forced:
   * a branch rewritten here, or moved on the remote, is refused with git's reason). What a move
   * to another runner starts from. Returns the commit pushed, or null when there is no branch.
   */
  async pushBranch(requirementId: string, remote: RemoteAccess): Promise<string | null> {
    // The commit is read while nothing else touches the worktree; the push itself (the network,
    // up to minutes) holds nothing, so the next run of this Requirement does not wait for it.
    const target = await this.requirementLock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (
        !row ||
        row.isolation !== 'worktree' ||
        row.branch === null ||
        row.createdAt === null ||
        row.removedAt !== null
      ) {
        return null;
      }
      // What the agent committed is imported first: the push reads the person's repository only.
      const { head } = await this.agentWork.bring(requirementId);
      const repo = await this.workspace.gitWorkspace();
      return repo === null || head === null ? null : { branch: row.branch, head, top: repo.top };
    });
    if (target === null) {
      return null;
    }
    await git(['push', '--no-verify', '--quiet', remote.name, `${target.head}:refs/heads/${target.branch}`], {
      cwd: target.top,
      env: remote.env,
      timeoutMs: REMOTE_TIMEOUT_MS,
    });
    return target.head;
  }

  /**
   * Team mode's move, before its unit: the branch its old runner last pushed, fetched from the
   * shared remote into this clone's branch of the same name. `fetched` is its commit, or null with
   * `reason` when the remote has none (nothing pushed yet) or git could not fetch it: the next run's
   * worktree then starts the branch again from its base here.
   */
  fetchForMove(requirementId: string, remote: RemoteAccess): Promise<MovedBranch> {
    return this.requirementLock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (!row || row.isolation !== 'worktree' || row.branch === null) {
        return { branch: null, fetched: null, reason: null };
      }
      const repo = await this.workspace.gitWorkspace();
      if (repo === null) {
        return { branch: row.branch, fetched: null, reason: 'this workspace is not a git repository with a commit' };
      }
      const ref = `refs/heads/${row.branch}`;
      try {
        // Forced into the local branch: the remote's is the Requirement's latest (it ran elsewhere since).
        await git(['fetch', '--no-tags', '--no-write-fetch-head', '--quiet', remote.name, `+${ref}:${ref}`], {
          cwd: repo.top,
          env: remote.env,
          timeoutMs: REMOTE_TIMEOUT_MS,
        });
      } catch (err) {
        const said = err instanceof GitError ? err.stderr.trim().split('\n').slice(-2).join(' ') : '';
        return {
          branch: row.branch,
          fetched: null,
          reason: `git could not fetch ${row.branch} from ${remote.name}: ${said || (err as Error).message}`,
        };
      }
      return { branch: row.branch, fetched: await this.workspace.resolveCommit(repo.top, ref), reason: null };
    });
  }

  /**
   * Team mode's move, in its unit: the worktree row forgets the old runner's folder (its path is
   * on another machine), so this runner's next run makes one here, on the fetched branch.
   */
  async stageMoved(tx: UnitOfWork, rows: RequirementRows, moved: MovedBranch): Promise<void> {
    const current = await this.repository.findForWrite(tx, rows.requirement.id);
    if (current.isolation !== 'worktree') {
      return;
    }
    const set: Partial<RequirementWorktreeEntity> = {
      createdAt: null,
      dirty: false,
      headSha: moved.fetched ?? current.headSha,
      importError: null,
      layout: null,
      path: null,
      refreshedAt: null,
      removedAt: null,
      setupAt: null,
      updatedAt: this.clock.nowIso(),
      workSha: moved.fetched ?? current.headSha,
    };
    this.repository.update(tx, rows.requirement.id, set);
    rows.requirement.worktree = { ...current, ...set };
  }

  /** After a purge committed (the rows are gone with their Requirements): the worktrees go too. */
  async removePurged(rows: RequirementWorktreeEntity[]): Promise<void> {
    for (const row of rows) {
      if (row.isolation === 'worktree' && row.path !== null && row.removedAt === null) {
        await this.requirementLock
          .run(row.requirementId, () => this.removeWorktree(row, 'purged', false))
          .catch((err: unknown) =>
            this.logger.warn(
              `could not remove the worktree ${row.path}: ${(err as Error).message}; the next start's sweep retries`,
            ),
          );
      }
      await fs.rm(this.patchDirectory(row.requirementId), { force: true, recursive: true }).catch(() => undefined);
    }
  }

  /**
   * Whether a worktree is still what its base made it: its HEAD is the base commit and nothing is
   * changed or added (a worktree made again from an agent's branch is not).
   */
  private async atBase(top: string, baseSha: string | null): Promise<boolean> {
    if (baseSha === null) {
      return false;
    }
    try {
      const head = await git(['rev-parse', '--verify', '-q', 'HEAD'], { cwd: top, timeoutMs: 30_000 });
      if (head.stdout.trim() !== baseSha) {
        return false;
      }
      const status = await git(['status', '--porcelain', '--untracked-files=normal'], { cwd: top, timeoutMs: 60_000 });
      return status.stdout.trim() === '';
    } catch {
      return false;
    }
  }

  /** Where a Requirement's saved patches go: in its workspace's data directory, hidden from agents. */
  private patchDirectory(requirementId: string): string {
    return path.join(this.runtime.paths.dataDirectory, 'worktree-patches', requirementId);
  }

  /** Teardown, patch of uncommitted work, removal, and the branch rule. The caller holds the Requirement's lock. */
  private async removeWorktree(
    row: RequirementWorktreeEntity,
    reason: string,
    savePatch = true,
  ): Promise<{ patch: string | null; branchDeleted: boolean }> {
    const top = row.path as string;
    const facts = await this.workspace.workspaceFacts();
    let patch: string | null = null;
    if ((await fs.lstat(path.join(top, '.git')).catch(() => null)) !== null) {
      const env = this.records.environment({
        baseRef: row.baseRef ?? '',
        branch: row.branch ?? '',
        port: row.portBase ?? 0,
        worktree: top,
      });
      const teardown = await runHook(this.sandbox, 'teardown', this.configuration.get('worktreeTeardownCommand'), {
        cwd: path.join(top, row.subdirectory ?? ''),
        env,
        git: facts.git === null ? null : { kind: 'own', personCommonDir: facts.git.commonDir },
        caps: null,
        pass: this.configuration.get('agentEnvironmentPass'),
        personCheckout: facts.repo?.top ?? null,
        secrets: this.secrets.environment(),
        // By teardown an agent has had the worktree: what the command runs may be its.
        untouched: () => Promise.resolve(false),
        marker: `teardown-${row.requirementId}-${randomBytes(4).toString('hex')}`,
        // No run, no proxy: no network at all, unless the person let agents reach all of it.
        network: this.configuration.get('networkMode') === 'open' ? { env: {}, sandbox: { kind: 'host' } } : undefined,
        signal: this.shutdown.signal,
        tmp: null,
        worktree: top,
      });
      if (!teardown.ok) {
        this.logger.warn(`the teardown command of ${top} ${teardown.failure}; removing it anyway`);
      }
      if (savePatch && facts.repo !== null) {
        patch = await this.savePatch(row).catch((err: unknown) => {
          this.logger.warn(`could not save the uncommitted work of ${top}: ${(err as Error).message}`);
          return null;
        });
      }
    }
    let branchDeleted = false;
    const linked = facts.git !== null && (await linkedEntry(top, facts.git.commonDir)) !== null;
    await this.workspace.inRepository(facts.repo?.top ?? top, async () => {
      // A linked worktree leaves an entry in the person's repository; an own repository is only its folder.
      await this.workspace.clear(linked ? (facts.repo?.top ?? null) : null, top);
      if (facts.repo !== null && row.branch !== null) {
        branchDeleted = await this.deleteBranchIfMerged(facts.repo.top, row);
      }
    });
    await this.agentWork.forget(row.requirementId);
    this.workspace.forgetDiskUsage();
    this.logger.log({
      branch: row.branch,
      branchDeleted,
      msg: 'worktree removed',
      patch,
      reason,
      requirementId: row.requirementId,
      worktree: top,
    });
    return { branchDeleted, patch };
  }

  private async deleteBranchIfMerged(top: string, row: RequirementWorktreeEntity): Promise<boolean> {
    const branch = row.branch as string;
    const base = (row.baseRef !== null ? await this.workspace.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    if (base === null || (await this.workspace.resolveCommit(top, `refs/heads/${branch}`)) === null) {
      return false;
    }
    // Merged, or no commits of its own: the base already has everything the branch has.
    if (
      !(await gitSucceeds(['merge-base', '--is-ancestor', `refs/heads/${branch}`, base], {
        cwd: top,
        timeoutMs: QUICK_TIMEOUT_MS,
      }))
    ) {
      return false;
    }
    return gitSucceeds(['branch', '-D', '--', branch], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS });
  }

  /**
   * Everything the agent committed and left uncommitted, imported first: its uncommitted and
   * untracked work as one binary patch on the branch's head, or null when clean. An import the
   * agent's repository refused still saves the files, against the last head taken.
   */
  private async savePatch(row: RequirementWorktreeEntity): Promise<string | null> {
    const imported = await this.agentWork.bring(row.requirementId, false);
    const { head, work } =
      imported.error === null ? imported : await this.agentWork.snapshotOnRecorded(row.requirementId);
    if (head === null || work === null || head === work) {
      return null;
    }
    const repo = await this.workspace.gitWorkspace();
    const diff = await git(['diff', '--binary', '--no-color', '--no-ext-diff', head, work], {
      cwd: repo?.top ?? this.runtime.paths.root,
      maxBytes: 512 * 1024 * 1024,
      timeoutMs: CREATE_TIMEOUT_MS,
    });
    if (diff.stdout === '') {
      return null;
    }
    const dir = this.patchDirectory(row.requirementId);
    await fs.mkdir(dir, { mode: 0o700, recursive: true });
    const file = path.join(dir, `${this.clock.nowIso().replace(/[:.]/g, '-')}.patch`);
    await fs.writeFile(file, this.secrets.mask(diff.stdout), { mode: 0o600 });
    return file;
  }
}
