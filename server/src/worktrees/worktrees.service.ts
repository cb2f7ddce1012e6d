import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';

import type { EventActor, RequirementChanges } from '@libs/contracts';

import type { NormalizedTrace } from '../agents/agent-adapter';
import type { RdWorkPlace } from '../agents/prompt';
import { AgentSandbox } from '../agents/agent-sandbox';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, invalid, notFound } from '../core/errors/domain-error';
import { RUNTIME, Runtime } from '../core/runtime';
import { workspaceKey } from '../core/workspace/workspace';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementEntity } from '../requirements/requirement.entity';
import { NewRequirement, RequirementsService } from '../requirements/requirements.service';
import { runBounded } from './bounded-process';
import type { WorkspaceGitResponseDto, WorkspaceGitState } from './dto/workspace.dto';
import { GitError, git, gitSucceeds, workspaceGitState } from './git';
import { KeyedLock } from './keyed-lock';
import { RequirementWorktreeEntity } from './requirement-worktree.entity';
import { excludingLinks, fileDiff, isInside, listChanges, worktreeRelativePath } from './worktree-changes';
import { runHook } from './worktree-commands';
import { provideFiles } from './worktree-files';
import { WorktreesRepository } from './worktrees.repository';

/** Ports handed out in blocks of 10 (AGENT_MANAGER_PORT is the first), one block per Requirement. */
export const PORT_FIRST = 42_000;
export const PORT_BLOCK = 10;
const PORT_BLOCKS = 2_000;
/** `git worktree add` of a large repository, submodules included. */
const CREATE_TIMEOUT_MS = 10 * 60 * 1000;
const QUICK_TIMEOUT_MS = 30_000;
const DISK_USAGE_TTL_MS = 60_000;

/** The git facts of the bound workspace, or null when it is not a repository with a commit. */
export interface GitWorkspace {
  /** The repository's top directory (the workspace itself, or a folder above it). */
  top: string;
  /** The branch checked out there, or null when detached. */
  branch: string | null;
  head: string;
}

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

/** A work tree's own git directory and the repository's shared one (the same for a main checkout). */
export interface GitDirectories {
  gitDir: string;
  commonDir: string;
}

/** The run a worktree is prepared for: its marker, its private temporary directory, and its stop. */
export interface RunPreparation {
  marker: string;
  tmp: string | null;
  signal: AbortSignal;
}

type Trace = (trace: NormalizedTrace) => void;

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
 * A git worktree and branch per Requirement (issue 14): chosen on create, made on the first run,
 * refreshed after each run, removed when the Requirement is purged, cancelled or idle. Git runs
 * through `git()` (no shell, time-limited, bounded); changes to the repository's worktree list
 * are serialized per repository, a worktree's own work per Requirement.
 */
@Injectable()
export class WorktreesService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorktreesService.name);
  /** `git worktree add/remove/prune` and branch changes of one repository, one at a time. */
  private readonly repositoryLock = new KeyedLock();
  /** Everything done to one Requirement's worktree, one at a time. */
  private readonly requirementLock = new KeyedLock();
  private lfs: Promise<boolean> | null = null;
  private readonly mergeBases = new Map<string, string>();
  private readonly lastComparison = new Map<string, { path: string; mergeBase: string }>();
  private usage: { at: number; figure: Promise<{ bytes: number; count: number }> } | null = null;
  /** Aborted when the manager stops: ends teardown commands in flight. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly sandbox: AgentSandbox,
  ) {}

  onModuleInit(): void {
    this.requirements.onCreating((input) => this.placeFor(input));
  }

  /** A teardown still running when the manager stops is ended with it (it carries its own marker). */
  beforeApplicationShutdown(): void {
    this.shutdown.abort();
  }

  /** `<worktree root>/<workspace hash>`: this workspace's worktrees, outside every data directory. */
  get directory(): string {
    const root = this.configuration.get('worktreeRoot') ?? path.join(this.runtime.paths.home, 'worktrees');
    return path.join(root, workspaceKey(this.runtime.paths.root));
  }

  /**
   * Disk used by this workspace's worktrees (`du`, symlinks not followed), measured at most once
   * a minute: a tree of 200 MB per Requirement takes a while to walk.
   */
  diskUsage(): Promise<{ bytes: number; count: number }> {
    if (this.usage === null || Date.now() - this.usage.at > DISK_USAGE_TTL_MS) {
      this.usage = { at: Date.now(), figure: this.measureDisk() };
    }
    return this.usage.figure;
  }

  private async measureDisk(): Promise<{ bytes: number; count: number }> {
    const entries = await fs.readdir(this.directory).catch(() => [] as string[]);
    if (entries.length === 0) {
      return { bytes: 0, count: 0 };
    }
    const result = await runBounded('du', ['-sk', this.directory], { cwd: this.directory, maxBytes: 4096, timeoutMs: QUICK_TIMEOUT_MS });
    const kib = Number(/^(\d+)/.exec(result.stdout.toString('utf8'))?.[1] ?? '0');
    return { bytes: kib * 1024, count: entries.length };
  }

  /** The workspace's git facts, asked fresh (a person may `git init` or switch branches any time). */
  async gitWorkspace(): Promise<GitWorkspace | null> {
    const cwd = this.runtime.paths.root;
    try {
      // Three independent questions, asked at once: every run's start waits for the answers.
      const [topOut, headOut, branchOut] = await Promise.all([
        git(['rev-parse', '--show-toplevel'], { cwd, timeoutMs: QUICK_TIMEOUT_MS }),
        git(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { cwd, okCodes: [0, 1], timeoutMs: QUICK_TIMEOUT_MS }),
        git(['symbolic-ref', '-q', '--short', 'HEAD'], { cwd, okCodes: [0, 1], timeoutMs: QUICK_TIMEOUT_MS }),
      ]);
      const top = topOut.stdout.trim();
      const head = headOut.stdout.trim();
      if (top === '' || head === '') {
        return null;
      }
      const branch = branchOut.stdout.trim();
      return { branch: branch === '' ? null : branch, head, top: await fs.realpath(top) };
    } catch (err) {
      if (err instanceof GitError && err.code === null && !err.timedOut) {
        this.logger.warn(`git is not available: ${err.message}`);
      }
      return null;
    }
  }

  /** What the workspace is to git now (the dashboard's in-place badge and its first-commit offer). */
  workspaceState(): Promise<WorkspaceGitState> {
    return workspaceGitState(this.runtime.paths.root, QUICK_TIMEOUT_MS);
  }

  /**
   * `git init` without a commit gives no worktree (nothing to branch from): agents work in the
   * person's checkout. This makes that first commit, empty, without touching the index or the
   * working files: an empty tree, a commit of it, and HEAD's branch written only while it still
   * does not exist (update-ref with an empty old value), so a commit the person made meanwhile
   * wins. Staged files are refused: they are the person's own first commit to make.
   */
  async makeFirstCommit(actor: EventActor): Promise<WorkspaceGitResponseDto> {
    const root = this.runtime.paths.root;
    const state = await this.workspaceState();
    if (state === 'not_git') {
      throw conflict('workspace_not_git', `${root} is not a git repository: run git init there first`);
    }
    if (state === 'repository') {
      throw conflict('workspace_has_commit', `the repository at ${root} already has a commit: new Requirements get their own worktree`);
    }
    const top = realpathSync((await git(['rev-parse', '--show-toplevel'], { cwd: root, timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim());
    return this.repositoryLock.run(top, async () => {
      const staged = await git(['ls-files', '--cached', '-z'], { allowTruncated: true, cwd: top, maxBytes: 4096, timeoutMs: QUICK_TIMEOUT_MS });
      if (staged.stdout !== '') {
        throw conflict(
          'staged_changes',
          `files are staged in ${top} (git add): commit them yourself (git commit -m "Initial commit") or unstage them (git rm -r -q --cached .); Agent Manager makes only an empty first commit`,
        );
      }
      const tree = (await git(['hash-object', '-w', '-t', 'tree', '/dev/null'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim();
      let commit: string;
      try {
        commit = (await git(['commit-tree', tree, '-m', 'Initial commit'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim();
      } catch (err) {
        if (err instanceof GitError && /who you are|empty ident|user\.(email|name)/i.test(err.stderr)) {
          throw conflict('git_identity_missing', 'git does not know who you are: set git config --global user.name "Your Name" and user.email "you@example.com", then try again');
        }
        throw err;
      }
      if (!(await gitSucceeds(['update-ref', '-m', 'agent-manager: first commit', 'HEAD', commit, ''], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }))) {
        throw conflict('workspace_has_commit', `the repository at ${top} got a commit meanwhile: new Requirements get their own worktree`);
      }
      this.logger.log({ ...audit(actor), commit, msg: 'first commit made', repository: top });
      return { commit, state: 'repository' as const };
    });
  }

  /**
   * On create: where the Requirement will work. An explicit `worktree` outside a git
   * repository, or a base ref git does not know, is a 400 before anything is written.
   */
  async placeFor(input: NewRequirement): Promise<(uow: UnitOfWork, requirement: RequirementEntity) => void> {
    const repo = await this.gitWorkspace();
    const asked = input.isolation ?? (input.baseRef !== undefined ? 'worktree' : this.configuration.get('isolation'));
    if (repo === null && (input.isolation === 'worktree' || input.baseRef !== undefined)) {
      throw invalid(
        'worktree_unavailable',
        `the workspace ${this.runtime.paths.root} is not a git repository with a commit, so it cannot have worktrees; use isolation "in_place"`,
      );
    }
    if (asked === 'in_place' && input.baseRef !== undefined) {
      throw invalid('base_ref_in_place', 'baseRef needs isolation "worktree": in place the agent works on whatever the checkout has');
    }
    const isolation = repo === null ? 'in_place' : asked;
    let baseRef: string | null = null;
    if (isolation === 'worktree' && repo !== null) {
      baseRef = input.baseRef ?? repo.branch ?? repo.head;
      if (input.baseRef !== undefined && (await this.resolveCommit(repo.top, input.baseRef)) === null) {
        throw invalid('unknown_base_ref', `git knows no branch, tag or commit named ${input.baseRef}`);
      }
    }
    return (tx, requirement) => {
      const row: RequirementWorktreeEntity = {
        ahead: 0,
        baseRef,
        baseSha: null,
        behind: 0,
        branch: null,
        createdAt: null,
        dirty: false,
        headSha: null,
        isolation,
        lastRunAt: null,
        path: null,
        portBase: null,
        refreshedAt: null,
        removedAt: null,
        requirementId: requirement.id,
        setupAt: null,
        subdirectory: null,
        updatedAt: requirement.createdAt,
      };
      this.repository.insert(tx, row);
      requirement.worktree = row;
    };
  }

  /**
   * Before an RD run: its working directory (creating the worktree, its files and its setup the
   * first time, or again after a removal) and the AGENT_MANAGER_* variables. Throws when the run
   * cannot start there; the caller fails the run with nothing consumed.
   */
  prepareRun(requirementId: string, trace: Trace, run: RunPreparation): Promise<RunPlace> {
    return this.requirementLock.run(requirementId, async () => {
      const row = (await this.repository.find(requirementId)) ?? (await this.adopt(requirementId));
      const repo = await this.gitWorkspace();
      const portBase = row.portBase ?? (await this.reservePorts(requirementId));
      const root = this.runtime.paths.root;
      const now = this.clock.nowIso();
      if (row.isolation === 'in_place') {
        // No event of its own: the run's end carries the Requirement with it (in place nothing else changes).
        await this.save(requirementId, { lastRunAt: now, path: root }, false);
        return {
          cwd: root,
          env: this.environment({ baseRef: '', branch: repo?.branch ?? '', port: portBase, worktree: root }),
          git: await this.gitDirectories(root),
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
      const env = this.environment({ baseRef: ready.baseRef ?? '', branch: ready.branch ?? '', port: portBase, worktree: top });
      const [lfsEnv, gitDirs] = await Promise.all([this.lfsEnvironment(repo.top), this.gitDirectories(top)]);
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
      await this.save(requirementId, setupAt === null ? { lastRunAt: now } : { lastRunAt: now, setupAt }, false);
      return {
        cwd,
        env: { ...env, ...lfsEnv },
        git: gitDirs,
        place: { baseRef: ready.baseRef, baseSha: ready.baseSha, branch: ready.branch ?? '', checkout: root, cwd, mode: 'worktree', worktree: top },
        workTree: top,
      };
    });
  }

  /** git's directories of a work tree (absolute), or null when it is not one. */
  async gitDirectories(cwd: string): Promise<GitDirectories | null> {
    try {
      const out = await git(['rev-parse', '--path-format=absolute', '--git-dir', '--git-common-dir'], { cwd, timeoutMs: QUICK_TIMEOUT_MS });
      const [gitDir, commonDir] = out.stdout.trim().split('\n');
      return gitDir && commonDir ? { commonDir: await fs.realpath(commonDir), gitDir: await fs.realpath(gitDir) } : null;
    } catch {
      return null;
    }
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
        const state = await this.gitState(row);
        return await this.save(requirementId, { ...state, refreshedAt: this.clock.nowIso() }, true, actor);
      } catch (err) {
        this.logger.warn(`could not read the git state of ${row.path}: ${(err as Error).message}`);
        return row;
      }
    });
  }

  /** GET /requirements/:id/changes */
  async changes(requirementId: string): Promise<RequirementChanges> {
    // Usually nothing moved since the last read: list against the merge base seen then while
    // git confirms it (one process less on the way), and list again only if it did move.
    const last = this.lastComparison.get(requirementId);
    const early = last ? listChanges(last.path, last.mergeBase, this.links()).catch(() => null) : null;
    const { head, mergeBase, row } = await this.comparison(requirementId);
    const top = row.path as string;
    this.lastComparison.set(requirementId, { mergeBase, path: top });
    const guessed = early !== null && last?.mergeBase === mergeBase && last.path === top ? await early : null;
    const listed = guessed ?? (await listChanges(top, mergeBase, this.links()));
    return { baseRef: row.baseRef ?? mergeBase, files: listed.files, headSha: head, mergeBaseSha: mergeBase, truncated: listed.truncated };
  }

  /** GET /requirements/:id/changes/diff: a path outside the worktree is refused. */
  async diff(requirementId: string, file: string, oldPath: string | null): Promise<{ diff: string; truncated: boolean }> {
    const { mergeBase, row } = await this.comparison(requirementId);
    const top = row.path as string;
    const checked = [file, ...(oldPath === null ? [] : [oldPath])].map((p) => this.insideWorktree(top, p));
    return fileDiff(top, mergeBase, checked[0], checked[1] ?? null);
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
      await this.save(
        requirementId,
        { branch: outcome.branchDeleted ? null : row.branch, dirty: false, portBase: null, removedAt: this.clock.nowIso(), setupAt: null },
        requirement !== null,
      );
      return outcome;
    });
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

  /** A reviewer's temporary detached worktree at `sha` (fetched from origin if missing); null in place. */
  async reviewWorktree(reviewId: string, sha: string, pullRequestNumber: number): Promise<string | null> {
    const repo = await this.gitWorkspace();
    if (repo === null || this.configuration.get('isolation') === 'in_place') {
      return null;
    }
    if ((await this.resolveCommit(repo.top, sha)) === null) {
      const fetched =
        (await gitSucceeds(['fetch', '--no-tags', 'origin', sha], { cwd: repo.top, timeoutMs: CREATE_TIMEOUT_MS })) ||
        (await gitSucceeds(['fetch', '--no-tags', 'origin', `pull/${pullRequestNumber}/head`], { cwd: repo.top, timeoutMs: CREATE_TIMEOUT_MS }));
      if (!fetched || (await this.resolveCommit(repo.top, sha)) === null) {
        throw invalid('review_head_missing', `the PR head ${sha} is not in the repository and could not be fetched from origin`);
      }
    }
    const target = path.join(this.directory, `review-${reviewId.replace(/^rev_/, '').slice(0, 12)}`);
    await fs.mkdir(this.directory, { recursive: true });
    const env = await this.lfsEnvironment(repo.top);
    await this.repositoryLock.run(repo.top, async () => {
      await this.clear(repo.top, target);
      await git(['worktree', 'add', '--detach', target, sha], { cwd: repo.top, env, timeoutMs: CREATE_TIMEOUT_MS });
    });
    return target;
  }

  async removeReviewWorktree(target: string): Promise<void> {
    const repo = await this.gitWorkspace();
    await this.repositoryLock.run(repo?.top ?? target, () => this.clear(repo?.top ?? null, target));
  }

  /** Removes a directory that may or may not be a registered worktree, and prunes what it leaves. */
  async clear(top: string | null, target: string): Promise<void> {
    if (top !== null) {
      await gitSucceeds(['worktree', 'remove', '--force', '--force', target], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }).catch(() => false);
    }
    await fs.rm(target, { force: true, recursive: true });
    if (top !== null) {
      await gitSucceeds(['worktree', 'prune'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }).catch(() => false);
    }
  }

  /** Where a Requirement's saved patches go: in its workspace's data directory, hidden from agents. */
  patchDirectory(requirementId: string): string {
    return path.join(this.runtime.paths.dataDirectory, 'worktree-patches', requirementId);
  }

  /** Teardown, patch of uncommitted work, removal, and the branch rule. The caller holds the Requirement's lock. */
  async removeWorktree(row: RequirementWorktreeEntity, reason: string, savePatch = true): Promise<{ patch: string | null; branchDeleted: boolean }> {
    const top = row.path as string;
    const repo = await this.gitWorkspace();
    let patch: string | null = null;
    if (await this.isWorktree(top)) {
      const env = this.environment({ baseRef: row.baseRef ?? '', branch: row.branch ?? '', port: row.portBase ?? 0, worktree: top });
      const teardown = await runHook(this.sandbox, 'teardown', this.configuration.get('worktreeTeardownCommand'), {
        cwd: path.join(top, row.subdirectory ?? ''),
        env,
        git: await this.gitDirectories(top),
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
    await this.repositoryLock.run(repo?.top ?? top, async () => {
      await this.clear(repo?.top ?? null, top);
      if (repo !== null && row.branch !== null) {
        branchDeleted = await this.deleteBranchIfMerged(repo.top, row);
      }
    });
    this.usage = null;
    this.logger.log({ branch: row.branch, branchDeleted, msg: 'worktree removed', patch, reason, requirementId: row.requirementId, worktree: top });
    return { branchDeleted, patch };
  }

  private async deleteBranchIfMerged(top: string, row: RequirementWorktreeEntity): Promise<boolean> {
    const branch = row.branch as string;
    const base = (row.baseRef !== null ? await this.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    if (base === null || (await this.resolveCommit(top, `refs/heads/${branch}`)) === null) {
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
    if (row.path !== null && row.createdAt !== null && row.removedAt === null && (await this.isWorktree(row.path))) {
      return row;
    }
    const requirementId = row.requirementId;
    const reopening = row.removedAt !== null || row.createdAt !== null;
    const target = row.path !== null && row.removedAt === null ? row.path : await this.choosePath(requirementId);
    if (this.insideDataDirectory(target)) {
      throw invalid(
        'worktree_root_hidden',
        `the worktree root ${path.dirname(target)} is inside Agent Manager's data directory, which agents cannot see; set worktreeRoot elsewhere`,
      );
    }
    let branch = row.branch;
    const branchExisted = branch !== null && (await this.branchExists(repo.top, branch));
    if (branch !== null && !branchExisted && row.createdAt !== null) {
      // Deleted since (merged, or by hand): a new one from the base.
      branch = null;
    }
    const baseRef = row.baseRef ?? repo.branch ?? repo.head;
    // Asked while a branch name is chosen (awaited below; a failure meanwhile is not left unhandled).
    const baseCommit = this.resolveCommit(repo.top, baseRef);
    baseCommit.catch(() => undefined);
    const title = (await this.requirements.find(requirementId))?.title ?? 'requirement';
    for (let attempt = 0; branch === null && attempt < 10; attempt += 1) {
      const candidate = branchName(title);
      if (!(await this.branchExists(repo.top, candidate))) {
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
    const subdirectory = row.subdirectory ?? this.subdirectory(repo);
    // Recorded before git runs: a crash from here on leaves a row that says what to clear.
    await this.save(requirementId, { baseRef, branch, createdAt: null, path: target, removedAt: null, setupAt: null, subdirectory }, false);
    const started = Date.now();
    const env = await this.lfsEnvironment(repo.top);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await this.repositoryLock.run(repo.top, () => this.addWorktree(repo.top, target, branch, baseSha, branchExisted, env));
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
    const head = branchExisted ? await this.revParse(target, 'HEAD') : baseSha;
    this.usage = null;
    return this.save(requirementId, { baseSha: branchExisted ? (row.baseSha ?? baseSha) : baseSha, createdAt: this.clock.nowIso(), dirty: false, headSha: head }, true);
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
        await this.clear(top, target);
      }
      const exists = force ? await this.branchExists(top, branch) : branchExisted;
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

  private subdirectory(repo: GitWorkspace): string | null {
    const configured = this.configuration.get('worktreeSubdirectory');
    if (configured !== null) {
      return path.normalize(configured);
    }
    // A workspace bound below the repository's top: the agent works in the same folder of its worktree.
    const relative = path.relative(repo.top, this.runtime.paths.root);
    return relative === '' ? null : relative;
  }

  private async choosePath(requirementId: string): Promise<string> {
    const short = requirementId.replace(/^req_/, '').replace(/-/g, '').slice(0, 8);
    for (let n = 1; ; n += 1) {
      const candidate = path.join(this.directory, n === 1 ? short : `${short}-${n}`);
      if (!(await this.repository.pathTaken(candidate, requirementId))) {
        return candidate;
      }
    }
  }

  private insideDataDirectory(target: string): boolean {
    return isInside(target, path.join(this.runtime.paths.home, 'workspaces')) || isInside(target, this.runtime.paths.dataDirectory);
  }

  /** A Requirement created before this table had rows for everything: it keeps working in place. */
  private async adopt(requirementId: string): Promise<RequirementWorktreeEntity> {
    if ((await this.requirements.find(requirementId)) === null) {
      throw notFound('requirement_not_found', `Requirement ${requirementId} not found`);
    }
    const now = this.clock.nowIso();
    const row: RequirementWorktreeEntity = {
      ahead: 0,
      baseRef: null,
      baseSha: null,
      behind: 0,
      branch: null,
      createdAt: null,
      dirty: false,
      headSha: null,
      isolation: 'in_place',
      lastRunAt: null,
      path: null,
      portBase: null,
      refreshedAt: null,
      removedAt: null,
      requirementId,
      setupAt: null,
      subdirectory: null,
      updatedAt: now,
    };
    await this.database.write(async (uow) => this.repository.insert(uow, row));
    return row;
  }

  /** The lowest free block of 10 ports; the unique index is the backstop. */
  private reservePorts(requirementId: string): Promise<number> {
    return this.database.write(async (uow) => {
      const used = new Set(await this.repository.usedPortBases(uow));
      for (let block = 0; block < PORT_BLOCKS; block += 1) {
        const base = PORT_FIRST + block * PORT_BLOCK;
        if (!used.has(base)) {
          this.repository.update(uow, requirementId, { portBase: base });
          return base;
        }
      }
      throw conflict('ports_exhausted', `all ${PORT_BLOCKS} port blocks are reserved by live Requirements`);
    });
  }

  /**
   * Updates the row and, when `publish`, the Requirement's snapshot with a `requirement.updated`
   * event (the card shows branch, ahead and dirty). Returns the row as written.
   */
  private save(requirementId: string, set: Partial<RequirementWorktreeEntity>, publish: boolean, actor: EventActor = SYSTEM_ACTOR): Promise<RequirementWorktreeEntity> {
    return this.database.write(async (uow) => {
      const rows = await this.requirements.loadForWrite(uow, requirementId);
      // From the table, not the cached snapshot: other writes (a port block) change the row alone.
      const current = await this.repository.findForWrite(uow, requirementId);
      const updatedAt = this.clock.nowIso();
      const next: RequirementWorktreeEntity = { ...current, ...set, updatedAt };
      this.repository.update(uow, requirementId, { ...set, updatedAt });
      rows.requirement.worktree = next;
      if (publish) {
        await this.events.append(uow, {
          actor,
          payload: { requirement: toRequirementResponse(rows.requirement, rows.session) },
          requirementId,
          sessionId: rows.session.id,
          type: 'requirement.updated',
        });
      }
      return next;
    });
  }

  /** The configured links, as relative paths without a trailing slash. */
  private links(): string[] {
    return this.configuration.get('worktreeLinks').map((link) => path.normalize(link).replace(/\/+$/, ''));
  }

  private environment(place: { worktree: string; branch: string; baseRef: string; port: number }): Record<string, string> {
    return {
      AGENT_MANAGER_BASE_REF: place.baseRef,
      AGENT_MANAGER_BRANCH: place.branch,
      AGENT_MANAGER_PORT: String(place.port),
      AGENT_MANAGER_ROOT: this.runtime.paths.root,
      AGENT_MANAGER_WORKTREE: place.worktree,
    };
  }

  /**
   * Without git-lfs, a repository whose attributes name the LFS filter cannot be checked out at
   * all (its smudge filter is a missing program): check out the pointer files instead, and give
   * the agent's git the same settings so that its `git status` works too.
   */
  private async lfsEnvironment(top: string): Promise<Record<string, string>> {
    const attributes = await fs.readFile(path.join(top, '.gitattributes'), 'utf8').catch(() => '');
    if (!/filter=lfs/.test(attributes)) {
      return {};
    }
    this.lfs ??= gitSucceeds(['lfs', 'version'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }).catch(() => false);
    if (await this.lfs) {
      return {};
    }
    const settings: Array<[string, string]> = [
      ['filter.lfs.smudge', ''],
      ['filter.lfs.clean', ''],
      ['filter.lfs.process', ''],
      ['filter.lfs.required', 'false'],
    ];
    // After any settings the manager's own environment already passes this way.
    const first = Number(process.env.GIT_CONFIG_COUNT ?? '0') || 0;
    const env: Record<string, string> = { GIT_CONFIG_COUNT: String(first + settings.length), GIT_LFS_SKIP_SMUDGE: '1' };
    settings.forEach(([key, value], i) => {
      env[`GIT_CONFIG_KEY_${first + i}`] = key;
      env[`GIT_CONFIG_VALUE_${first + i}`] = value;
    });
    return env;
  }

  private async gitState(row: RequirementWorktreeEntity): Promise<Pick<RequirementWorktreeEntity, 'ahead' | 'behind' | 'dirty' | 'headSha'>> {
    const top = row.path as string;
    const env = await this.lfsEnvironment((await this.gitWorkspace())?.top ?? top);
    const headSha = await this.revParse(top, 'HEAD');
    const base = (row.baseRef !== null ? await this.resolveCommit(top, row.baseRef) : null) ?? row.baseSha;
    let ahead = 0;
    let behind = 0;
    if (base !== null && headSha !== null) {
      const counts = await git(['rev-list', '--left-right', '--count', `${base}...${headSha}`], { cwd: top, env, timeoutMs: QUICK_TIMEOUT_MS });
      [behind, ahead] = counts.stdout.trim().split(/\s+/).map(Number) as [number, number];
    }
    // Any output at all is dirty: the first bytes are enough.
    const status = await git(['status', '--porcelain', '-z', '--untracked-files=normal', ...excludingLinks(this.links())], {
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
    const noWorktree = () => conflict('no_worktree', `Requirement ${requirementId} has no worktree (in place, not started yet, or removed)`);
    if (!row || row.isolation !== 'worktree' || row.path === null || row.removedAt !== null || row.createdAt === null) {
      throw noWorktree();
    }
    // One git call for both ends (a read of the changes is a handful of processes, not a dozen).
    const ends = await git(['rev-parse', ...(row.baseRef !== null ? [`${row.baseRef}^{commit}`] : []), 'HEAD'], {
      cwd: row.path,
      okCodes: [0, 128],
      timeoutMs: QUICK_TIMEOUT_MS,
    }).catch(() => null);
    if (ends === null || !(await fs.stat(path.join(row.path, '.git')).catch(() => null))) {
      throw noWorktree();
    }
    const shas = ends.stdout.trim().split('\n');
    const head = ends.code === 0 ? (shas[shas.length - 1] ?? null) : await this.revParse(row.path, 'HEAD');
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

  async isWorktree(target: string): Promise<boolean> {
    try {
      const top = (await git(['rev-parse', '--show-toplevel'], { cwd: target, timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim();
      return (await fs.realpath(top)) === (await fs.realpath(target));
    } catch {
      return false;
    }
  }

  private branchExists(top: string, branch: string): Promise<boolean> {
    return gitSucceeds(['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS });
  }

  private async resolveCommit(cwd: string, ref: string): Promise<string | null> {
    if (ref.startsWith('-')) {
      return null;
    }
    const out = await git(['rev-parse', '--verify', '-q', `${ref}^{commit}`], { cwd, okCodes: [0, 1, 128], timeoutMs: QUICK_TIMEOUT_MS });
    const sha = out.stdout.trim();
    return out.code === 0 && sha !== '' ? sha : null;
  }

  private revParse(cwd: string, ref: string): Promise<string | null> {
    return this.resolveCommit(cwd, ref);
  }
}
