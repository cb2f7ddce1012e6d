import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import type { NormalizedTrace } from '../agents/agent-adapter';
import type { RdWorkPlace } from '../agents/prompt';
import { AgentSandbox } from '../agents/agent-sandbox';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { DomainEvents, OnDomainEvent } from '../core/domain-events';
import { conflict, invalid } from '../core/errors/domain-error';
import { RUNTIME, Runtime } from '../core/runtime';
import { SYSTEM_ACTOR } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import { GitError, git, gitSucceeds } from '../core/git/git';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { RequirementRows } from '../requirements/requirements.repository';
import { KeyedLock } from './keyed-lock';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { WorktreeChanges } from './worktree-changes.service';
import { runHook } from './worktree-commands';
import { provideFiles } from './worktree-files';
import { WorktreeRecords } from './worktree-records.service';
import { CREATE_TIMEOUT_MS, GitDirectories, GitWorkspace, QUICK_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';
import { WorktreesRepository } from './worktrees.repository';
import './worktree.events';

/** Where an RD run works, what its environment says about it, and what its instructions do. */
export interface RunPlace {
  cwd: string;
  env: Record<string, string>;
  /** The tree the agent may write: its worktree's top, or the checkout in place. */
  workTree: string;
  /** git's directories for it, or null outside a repository. */
  git: GitDirectories | null;
  place: RdWorkPlace;
}

/** The run a worktree is prepared for: its marker, its private temporary directory, and its stop. */
export interface RunPreparation {
  marker: string;
  tmp: string | null;
  signal: AbortSignal;
}

type Trace = (trace: NormalizedTrace) => void;

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

const lifecycle = (title: string, detail: string | null, status: NormalizedTrace['status'] = 'completed'): NormalizedTrace => ({
  detail,
  kind: status === 'failed' ? 'error' : 'lifecycle',
  nativeType: 'worktree',
  status,
  title,
  toolCallId: null,
  toolName: null,
});

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
 * The lifecycle of a Requirement's git worktree and branch (issue 14): made on the first run,
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
    private readonly changes: WorktreeChanges,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly domainEvents: DomainEvents,
    private readonly records: WorktreeRecords,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly sandbox: AgentSandbox,
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
      const { git: rootGit, repo } = await this.workspace.workspaceFacts();
      const portBase = row.portBase ?? (await this.records.reservePorts(requirementId));
      const root = this.runtime.paths.root;
      const now = this.clock.nowIso();
      if (row.isolation === 'in_place') {
        // No event of its own: the run's end carries the Requirement with it (in place nothing else changes).
        await this.records.save(requirementId, { lastRunAt: now, path: root }, false);
        return {
          cwd: root,
          env: this.records.environment({ baseRef: '', branch: repo?.branch ?? '', port: portBase, worktree: root }),
          git: rootGit,
          place: { branch: repo?.branch ?? null, cwd: root, mode: 'in_place', reason: repo === null ? 'not_git' : 'chosen' },
          workTree: root,
        };
      }
      if (repo === null) {
        throw invalid('worktree_unavailable', `the workspace ${root} is no longer a git repository with a commit; its worktree cannot be made`);
      }
      const ready = await this.ensureWorktree(repo, { ...row, portBase }, trace);
      const top = ready.path as string;
      const cwd = path.join(top, ready.subdirectory ?? '');
      await fs.mkdir(cwd, { recursive: true });
      const env = this.records.environment({ baseRef: ready.baseRef ?? '', branch: ready.branch ?? '', port: portBase, worktree: top });
      const [lfsEnv, gitDirs] = await Promise.all([this.workspace.lfsEnvironment(repo.top), this.workspace.gitDirectories(top)]);
      let setupAt: string | null = null;
      if (ready.setupAt === null) {
        const result = await runHook(this.sandbox, 'setup', this.configuration.get('worktreeSetupCommand'), {
          cwd,
          env: { ...env, ...lfsEnv },
          git: gitDirs,
          marker: run.marker,
          signal: run.signal,
          tmp: run.tmp,
          worktree: top,
        });
        if (result.command !== null) {
          trace(lifecycle(`Worktree setup: ${result.command}${result.ok ? '' : ` ${result.failure}`}`, result.output || null, result.ok ? 'completed' : 'failed'));
        }
        if (!result.ok) {
          throw invalid('worktree_setup_failed', `the worktree setup command (${result.command}) ${result.failure}`);
        }
        setupAt = this.clock.nowIso();
      }
      // One write for both.
      await this.records.save(requirementId, setupAt === null ? { lastRunAt: now } : { lastRunAt: now, setupAt }, false);
      return {
        cwd,
        env: { ...env, ...lfsEnv },
        git: gitDirs,
        place: { baseRef: ready.baseRef, baseSha: ready.baseSha, branch: ready.branch ?? '', checkout: root, cwd, mode: 'worktree', worktree: top },
        workTree: top,
      };
    });
  }

  /**
   * Runs `body` while nothing else is done to the Requirement's worktree (no run is prepared, no
   * refresh or removal runs): a land reads and moves its branch inside.
   */
  whileHeld<T>(requirementId: string, body: () => Promise<T>): Promise<T> {
    return this.requirementLock.run(requirementId, body);
  }

  /** After a run (and on demand): reads the branch's git state and publishes it with the Requirement. */
  refresh(requirementId: string, actor: EventActor = SYSTEM_ACTOR): Promise<RequirementWorktreeEntity | null> {
    return this.requirementLock.run(requirementId, async () => {
      const row = await this.repository.find(requirementId);
      if (!row || row.isolation !== 'worktree' || row.path === null || row.removedAt !== null || row.createdAt === null) {
        return row;
      }
      try {
        // No run is active now (the next one waits for this lock): bring the worktree's own index
        // up to date, so that later reads need not re-hash files git thinks "racily" clean.
        await git(['update-index', '-q', '--refresh'], { cwd: row.path, env: { GIT_OPTIONAL_LOCKS: '1' }, okCodes: [0, 1], timeoutMs: QUICK_TIMEOUT_MS }).catch(() => undefined);
        const state = await this.changes.branchState(row);
        const saved = await this.records.save(requirementId, { ...state, refreshedAt: this.clock.nowIso() }, true, actor);
        this.domainEvents.notify('worktree.refreshed', saved);
        return saved;
      } catch (err) {
        this.logger.warn(`could not read the git state of ${row.path}: ${(err as Error).message}`);
        return row;
      }
    });
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
        { branch: outcome.branchDeleted ? null : row.branch, dirty: false, portBase: null, removedAt: this.clock.nowIso(), setupAt: null },
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
      if (!row || row.isolation !== 'worktree' || row.branch === null || row.createdAt === null || row.removedAt !== null) {
        return null;
      }
      const repo = await this.workspace.gitWorkspace();
      const head = repo === null ? null : await this.workspace.resolveCommit(repo.top, `refs/heads/${row.branch}`);
      return repo === null || head === null ? null : { branch: row.branch, head, top: repo.top };
    });
    if (target === null) {
      return null;
    }
    await git(['push', '--no-verify', '--quiet', remote.name, `${target.head}:refs/heads/${target.branch}`], { cwd: target.top, env: remote.env, timeoutMs: REMOTE_TIMEOUT_MS });
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
        await git(['fetch', '--no-tags', '--no-write-fetch-head', '--quiet', remote.name, `+${ref}:${ref}`], { cwd: repo.top, env: remote.env, timeoutMs: REMOTE_TIMEOUT_MS });
      } catch (err) {
        const said = err instanceof GitError ? err.stderr.trim().split('\n').slice(-2).join(' ') : '';
        return { branch: row.branch, fetched: null, reason: `git could not fetch ${row.branch} from ${remote.name}: ${said || (err as Error).message}` };
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
      path: null,
      refreshedAt: null,
      removedAt: null,
      setupAt: null,
      updatedAt: this.clock.nowIso(),
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
          .catch((err: unknown) => this.logger.warn(`could not remove the worktree ${row.path}: ${(err as Error).message}; the next start's sweep retries`));
      }
      await fs.rm(this.patchDirectory(row.requirementId), { force: true, recursive: true }).catch(() => undefined);
    }
  }

  /** Where a Requirement's saved patches go: in its workspace's data directory, hidden from agents. */
  private patchDirectory(requirementId: string): string {
    return path.join(this.runtime.paths.dataDirectory, 'worktree-patches', requirementId);
  }

  /** Teardown, patch of uncommitted work, removal, and the branch rule. The caller holds the Requirement's lock. */
  private async removeWorktree(row: RequirementWorktreeEntity, reason: string, savePatch = true): Promise<{ patch: string | null; branchDeleted: boolean }> {
    const top = row.path as string;
    const repo = await this.workspace.gitWorkspace();
    let patch: string | null = null;
    if (await this.workspace.isWorktree(top)) {
      const env = this.records.environment({ baseRef: row.baseRef ?? '', branch: row.branch ?? '', port: row.portBase ?? 0, worktree: top });
      const teardown = await runHook(this.sandbox, 'teardown', this.configuration.get('worktreeTeardownCommand'), {
        cwd: path.join(top, row.subdirectory ?? ''),
        env,
        git: await this.workspace.gitDirectories(top),
        marker: `teardown-${row.requirementId}-${randomBytes(4).toString('hex')}`,
        signal: this.shutdown.signal,
        tmp: null,
        worktree: top,
      });
      if (!teardown.ok) {
        this.logger.warn(`the teardown command of ${top} ${teardown.failure}; removing it anyway`);
      }
      if (savePatch) {
        patch = await this.savePatch(row, top);
      }
    }
    let branchDeleted = false;
    await this.workspace.inRepository(repo?.top ?? top, async () => {
      await this.workspace.clear(repo?.top ?? null, top);
      if (repo !== null && row.branch !== null) {
        branchDeleted = await this.deleteBranchIfMerged(repo.top, row);
      }
    });
    this.workspace.forgetDiskUsage();
    this.logger.log({ branch: row.branch, branchDeleted, msg: 'worktree removed', patch, reason, requirementId: row.requirementId, worktree: top });
    return { branchDeleted, patch };
  }

  private async deleteBranchIfMerged(top: string, row: RequirementWorktreeEntity): Promise<boolean> {
    const branch = row.branch as string;
    const base = (row.baseRef !== null ? await this.workspace.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    if (base === null || (await this.workspace.resolveCommit(top, `refs/heads/${branch}`)) === null) {
      return false;
    }
    // Merged, or no commits of its own: the base already has everything the branch has.
    if (!(await gitSucceeds(['merge-base', '--is-ancestor', `refs/heads/${branch}`, base], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }))) {
      return false;
    }
    return gitSucceeds(['branch', '-D', '--', branch], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS });
  }

  /** Uncommitted and untracked work as one binary patch against HEAD (through a private index), or null when clean. */
  private async savePatch(row: RequirementWorktreeEntity, top: string): Promise<string | null> {
    const dir = this.patchDirectory(row.requirementId);
    await fs.mkdir(dir, { mode: 0o700, recursive: true });
    const index = path.join(dir, `.index-${process.pid}`);
    try {
      const env = { GIT_INDEX_FILE: index };
      await git(['read-tree', 'HEAD'], { cwd: top, env, timeoutMs: CREATE_TIMEOUT_MS });
      await git(['add', '-A', '--', '.'], { cwd: top, env, timeoutMs: CREATE_TIMEOUT_MS });
      const diff = await git(['diff', '--cached', '--binary', '--no-color', '--no-ext-diff', 'HEAD'], { cwd: top, env, maxBytes: 512 * 1024 * 1024, timeoutMs: CREATE_TIMEOUT_MS });
      if (diff.stdout === '') {
        return null;
      }
      const file = path.join(dir, `${this.clock.nowIso().replace(/[:.]/g, '-')}.patch`);
      await fs.writeFile(file, diff.stdout, { mode: 0o600 });
      return file;
    } finally {
      await fs.rm(index, { force: true });
    }
  }

  private async ensureWorktree(repo: GitWorkspace, row: RequirementWorktreeEntity, trace: Trace): Promise<RequirementWorktreeEntity> {
    if (row.path !== null && row.createdAt !== null && row.removedAt === null && (await this.workspace.isWorktree(row.path))) {
      return row;
    }
    const requirementId = row.requirementId;
    const reopening = row.removedAt !== null || row.createdAt !== null;
    const target = row.path !== null && row.removedAt === null ? row.path : await this.records.choosePath(requirementId);
    if (this.records.insideDataDirectory(target)) {
      throw invalid(
        'worktree_root_hidden',
        `the worktree root ${path.dirname(target)} is inside Agent Manager's data directory, which agents cannot see; set worktreeRoot elsewhere`,
      );
    }
    let branch = row.branch;
    const branchExisted = branch !== null && (await this.workspace.branchExists(repo.top, branch));
    if (branch !== null && !branchExisted && row.createdAt !== null) {
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
    // Recorded before git runs: a crash from here on leaves a row that says what to clear.
    await this.records.save(requirementId, { baseRef, branch, createdAt: null, path: target, removedAt: null, setupAt: null, subdirectory }, false);
    const started = Date.now();
    const env = await this.workspace.lfsEnvironment(repo.top);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await this.workspace.inRepository(repo.top, () => this.addWorktree(repo.top, target, branch, baseSha, branchExisted, env));
    if (await fs.stat(path.join(target, '.gitmodules')).catch(() => null)) {
      await git(['submodule', 'update', '--init', '--recursive'], { cwd: target, env, timeoutMs: CREATE_TIMEOUT_MS });
    }
    const files = await provideFiles(repo.top, target, this.configuration.get('worktreeLinks'));
    const lfsNote = env.GIT_LFS_SKIP_SMUDGE ? '\ngit-lfs is not installed: LFS files are left as pointer files.' : '';
    trace(
      lifecycle(
        `${reopening ? 'Recreated' : 'Created'} worktree ${target} on ${branch}`,
        `base ${baseRef} (${baseSha.slice(0, 12)}), ${Date.now() - started} ms` +
          (files.linked.length > 0 ? `\nlinked: ${files.linked.join(', ')}` : '') +
          (files.copied.length > 0 ? `\ncopied: ${files.copied.join(', ')}` : '') +
          lfsNote,
      ),
    );
    // A branch made now starts at the base; only one that existed needs asking where it is.
    const head = branchExisted ? await this.workspace.resolveCommit(target, 'HEAD') : baseSha;
    this.workspace.forgetDiskUsage();
    return this.records.save(requirementId, { baseSha: branchExisted ? (row.baseSha ?? baseSha) : baseSha, createdAt: this.clock.nowIso(), dirty: false, headSha: head }, true);
  }

  /**
   * `git worktree add` after clearing whatever a crashed attempt left (the directory, a locked
   * admin entry); once more after a prune if git still refuses.
   */
  private async addWorktree(top: string, target: string, branch: string, baseSha: string, branchExisted: boolean, env: Record<string, string>): Promise<void> {
    const attempt = async (force: boolean) => {
      // The first time, with nothing at the target, there is nothing to clear (two git processes
      // fewer) and the branch is as the caller just saw it; should a stale admin entry make git
      // refuse, the retry clears, prunes and asks again.
      if (force || (await fs.lstat(target).catch(() => null)) !== null) {
        await this.workspace.clear(top, target);
      }
      const exists = force ? await this.workspace.branchExists(top, branch) : branchExisted;
      const args = ['worktree', 'add', ...(force ? ['-f', '-f'] : []), ...(exists ? [target, branch] : ['-b', branch, target, baseSha])];
      await git(args, { cwd: top, env, timeoutMs: CREATE_TIMEOUT_MS });
    };
    try {
      await attempt(false);
    } catch (err) {
      this.logger.warn(`git worktree add ${target} failed (${(err as Error).message}); pruning and trying again`);
      await attempt(true);
    }
  }
}
