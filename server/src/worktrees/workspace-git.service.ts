import { constants as fsConstants, realpathSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { DomainError, conflict, unavailable } from '../core/errors/domain-error';
import { RUNTIME, Runtime } from '../core/runtime';
import { workspaceKey } from '../core/workspace/workspace';
import { audit } from '../events/event-log.service';
import { runBounded } from '../core/process/bounded-process';
import type { SandboxGit } from '../agents/sandbox-layout';
import type { WorkspaceGitResponseDto, WorkspaceGitState } from './dto/workspace.dto';
import { GitError, git, gitSucceeds, workspaceGitState } from '../core/git/git';
import { KeyedLock } from './keyed-lock';

/** `git worktree add` of a large repository, submodules included. */
export const CREATE_TIMEOUT_MS = 10 * 60 * 1000;
/** Any other git question: a few files or refs. */
export const QUICK_TIMEOUT_MS = 30_000;
/**
 * The workspace's facts (one rev-parse: its top, git directories and HEAD's commit) are read on
 * every create while a person waits: milliseconds on any repository, so a git that takes this
 * long is hanging (a FIFO in its objects, a dead network mount) and the create is a 503 at once.
 */
const FACTS_TIMEOUT_MS = 10_000;
const DISK_USAGE_TTL_MS = 60_000;

/** The git facts of the bound workspace, or null when it is not a repository with a commit. */
export interface GitWorkspace {
  /** The repository's top directory (the workspace itself, or a folder above it). */
  top: string;
  /** The branch checked out there, or null when detached. */
  branch: string | null;
  head: string;
}

/** A work tree's own git directory and the repository's shared one (the same for a main checkout). */
export interface GitDirectories {
  gitDir: string;
  commonDir: string;
}

/**
 * The bound workspace as git sees it, and what every worktree of it shares: its git facts and
 * first commit, the folder the worktrees live in and the disk they use, the lock that serializes
 * changes to the repository's worktree list, and the small git questions (a commit, a branch, a
 * work tree's directories, the LFS settings) the worktree lifecycle, the changes and the
 * reviewers' worktrees all ask.
 */
@Injectable()
export class WorkspaceGit {
  private readonly logger = new Logger(WorkspaceGit.name);
  /** `git worktree add/remove/prune` and branch changes of one repository, one at a time. */
  private readonly repositoryLock = new KeyedLock();
  private lfs: Promise<boolean> | null = null;
  private seen: Promise<boolean> | null = null;
  private usage: { at: number; figure: Promise<{ bytes: number; count: number }> } | null = null;

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

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

  /** A worktree was made or removed: the next figure is measured afresh. */
  forgetDiskUsage(): void {
    this.usage = null;
  }

  private async measureDisk(): Promise<{ bytes: number; count: number }> {
    const entries = await fs.readdir(this.directory).catch(() => [] as string[]);
    if (entries.length === 0) {
      return { bytes: 0, count: 0 };
    }
    const result = await runBounded('du', ['-sk', this.directory], {
      cwd: this.directory,
      maxBytes: 4096,
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const kib = Number(/^(\d+)/.exec(result.stdout.toString('utf8'))?.[1] ?? '0');
    return { bytes: kib * 1024, count: entries.length };
  }

  /** The workspace's git facts, asked fresh (a person may `git init` or switch branches any time); null when git cannot say. */
  async gitWorkspace(): Promise<GitWorkspace | null> {
    return (await this.workspaceFacts()).repo;
  }

  /** The workspace's git facts, or nothing known where git failed (for what only reports). */
  async workspaceFacts(): Promise<{ repo: GitWorkspace | null; git: GitDirectories | null }> {
    const facts = await this.askFacts();
    return 'failure' in facts ? { git: null, repo: null } : facts;
  }

  /**
   * The facts a worktree needs, or 503 `workspace_git_unavailable` (issue 44 §4): a git that
   * fails or times out is an error, never an answer, and a workspace once seen as a repository
   * with a commit that now seems none is not taken at its word (its HEAD's branch deleted, a
   * FIFO in its objects): nothing is made in place because of it.
   */
  async repositoryFacts(): Promise<{ repo: GitWorkspace; git: GitDirectories }> {
    const facts = await this.askFacts();
    if ('failure' in facts) {
      throw this.unavailable(facts.failure);
    }
    if (facts.repo === null || facts.git === null) {
      throw this.unavailable(
        facts.git === null
          ? 'it is no longer a git repository'
          : 'its HEAD names no commit (its branch was deleted or is broken)',
      );
    }
    return { git: facts.git, repo: facts.repo };
  }

  /**
   * In place: the facts, or 503 when git fails on a workspace seen as a repository (the sandbox
   * must know the git directory it protects); where it never was one, nothing (as without git).
   */
  async inPlaceFacts(): Promise<{ repo: GitWorkspace | null; git: GitDirectories | null }> {
    const facts = await this.askFacts();
    if ('failure' in facts) {
      if (await this.seenAsRepository()) {
        throw this.unavailable(facts.failure);
      }
      return { git: null, repo: null };
    }
    return facts;
  }

  /**
   * What a reviewer's sandbox must know of git where it works: the person's repository when that
   * is the workspace itself (in place), else the reviewer's own repository borrowing its objects.
   */
  async sandboxGitFor(cwd: string): Promise<SandboxGit | null> {
    const facts = await this.workspaceFacts();
    if (facts.git === null) {
      return null;
    }
    const [real, root] = await Promise.all([
      fs.realpath(cwd).catch(() => cwd),
      fs.realpath(this.runtime.paths.root).catch(() => this.runtime.paths.root),
    ]);
    return real === root ? { ...facts.git, kind: 'shared' } : { kind: 'own', personCommonDir: facts.git.commonDir };
  }

  /**
   * What a new Requirement's place is decided from: the repository, or null where the workspace is
   * not one with a commit (nor ever was: git not even installed counts) — but 503 when git fails
   * on a workspace seen as a repository, or when it was one and now seems not.
   */
  async placeFacts(): Promise<GitWorkspace | null> {
    const facts = await this.askFacts();
    if ('failure' in facts) {
      if (await this.seenAsRepository()) {
        throw this.unavailable(facts.failure);
      }
      return null;
    }
    if (facts.repo === null && (await this.seenAsRepository())) {
      throw this.unavailable(
        facts.git === null
          ? 'it is no longer a git repository'
          : 'its HEAD names no commit (its branch was deleted or is broken)',
      );
    }
    return facts.repo;
  }

  private unavailable(why: string): DomainError {
    return unavailable(
      'workspace_git_unavailable',
      `git cannot be trusted on the workspace ${this.runtime.paths.root} now: ${why}. Nothing was made in place instead; fix the repository and try again` +
        ' (or, to work in the checkout itself on purpose, create the Requirement with isolation "in_place")',
    );
  }

  /** Whether this workspace was ever seen as a repository with a commit (recorded in its data directory). */
  private async seenAsRepository(): Promise<boolean> {
    this.seen ??= fs
      .stat(this.seenMarker())
      .then(() => true)
      .catch(() => false);
    return this.seen;
  }

  private seenMarker(): string {
    return path.join(this.runtime.paths.dataDirectory, 'workspace-repository');
  }

  private async recordSeen(top: string): Promise<void> {
    if (await this.seenAsRepository()) {
      return;
    }
    this.seen = Promise.resolve(true);
    await fs
      .writeFile(this.seenMarker(), `${top}\n`, { mode: 0o600 })
      .catch((err: unknown) =>
        this.logger.warn(`could not record that the workspace is a repository: ${(err as Error).message}`),
      );
  }

  /**
   * The workspace's git facts and its git directories, from one git: every run's start waits for
   * them, and twenty runs starting at once queued over a hundred gits through the one spawner
   * (the top, the git directory whose HEAD names the branch, the shared git directory, and HEAD's
   * commit: exit 1, nothing printed for it, before the first commit; the directories are there
   * then, the repository facts are not). Outside a repository git says so (exit 128); any other
   * failure is one, with its reason.
   */
  private async askFacts(): Promise<{ repo: GitWorkspace | null; git: GitDirectories | null } | { failure: string }> {
    const cwd = this.runtime.paths.root;
    let out;
    try {
      out = await git(
        [
          'rev-parse',
          '--path-format=absolute',
          '--show-toplevel',
          '--git-dir',
          '--git-common-dir',
          '--verify',
          '-q',
          'HEAD^{commit}',
        ],
        {
          cwd,
          okCodes: [0, 1],
          timeoutMs: FACTS_TIMEOUT_MS,
        },
      );
    } catch (err) {
      if (err instanceof GitError && err.code === 128 && /not a git repository/i.test(err.stderr)) {
        return { git: null, repo: null };
      }
      if (err instanceof GitError && err.code === null && !err.timedOut) {
        this.logger.warn(`git is not available: ${err.message}`);
      }
      return { failure: (err as Error).message };
    }
    const lines = out.stdout.trim().split('\n');
    const [top = '', gitDir = '', commonDir = '', head = ''] = lines;
    if (lines.length !== (out.code === 0 ? 4 : 3) || top === '' || gitDir === '' || commonDir === '') {
      return out.code === 0
        ? { failure: `git rev-parse gave an answer that is not one (${lines.length} lines)` }
        : { git: null, repo: null };
    }
    const directories = { commonDir: await fs.realpath(commonDir), gitDir: await fs.realpath(gitDir) };
    if (out.code !== 0 || head === '') {
      return { git: directories, repo: null };
    }
    const repo = { branch: await this.checkedOutBranch(cwd, gitDir), head, top: await fs.realpath(top) };
    await this.recordSeen(repo.top);
    return { git: directories, repo };
  }

  /**
   * The branch HEAD names, read from the HEAD file (`ref: refs/heads/<name>`; a commit when
   * detached). Only its first bytes are read: the shared git directory is agent-writable. A
   * HEAD that is neither (the reftable backend's placeholder, anything odd) is asked of git.
   */
  private async checkedOutBranch(cwd: string, gitDir: string): Promise<string | null> {
    const text = await readStart(path.join(gitDir, 'HEAD'), 512);
    if (/^[0-9a-f]{40,64}\n?$/.test(text)) {
      return null;
    }
    const named = /^ref: refs\/heads\/([^\n]+)\n?$/.exec(text)?.[1];
    if (named !== undefined && named !== '.invalid') {
      return named;
    }
    const out = await git(['symbolic-ref', '-q', '--short', 'HEAD'], {
      cwd,
      okCodes: [0, 1],
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    return out.stdout.trim() || null;
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
      throw conflict(
        'workspace_has_commit',
        `the repository at ${root} already has a commit: new Requirements get their own worktree`,
      );
    }
    const top = realpathSync(
      (await git(['rev-parse', '--show-toplevel'], { cwd: root, timeoutMs: QUICK_TIMEOUT_MS })).stdout.trim(),
    );
    return this.inRepository(top, async () => {
      const staged = await git(['ls-files', '--cached', '-z'], {
        allowTruncated: true,
        cwd: top,
        maxBytes: 4096,
        timeoutMs: QUICK_TIMEOUT_MS,
      });
      if (staged.stdout !== '') {
        throw conflict(
          'staged_changes',
          `files are staged in ${top} (git add): commit them yourself (git commit -m "Initial commit") or unstage them (git rm -r -q --cached .); Agent Manager makes only an empty first commit`,
        );
      }
      const tree = (
        await git(['hash-object', '-w', '-t', 'tree', '/dev/null'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS })
      ).stdout.trim();
      let commit: string;
      try {
        commit = (
          await git(['commit-tree', tree, '-m', 'Initial commit'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS })
        ).stdout.trim();
      } catch (err) {
        if (err instanceof GitError && /who you are|empty ident|user\.(email|name)/i.test(err.stderr)) {
          throw conflict(
            'git_identity_missing',
            'git does not know who you are: set git config --global user.name "Your Name" and user.email "you@example.com", then try again',
          );
        }
        throw err;
      }
      if (
        !(await gitSucceeds(['update-ref', '-m', 'agent-manager: first commit', 'HEAD', commit, ''], {
          cwd: top,
          timeoutMs: QUICK_TIMEOUT_MS,
        }))
      ) {
        throw conflict(
          'workspace_has_commit',
          `the repository at ${top} got a commit meanwhile: new Requirements get their own worktree`,
        );
      }
      this.logger.log({ ...audit(actor), commit, msg: 'first commit made', repository: top });
      return { commit, state: 'repository' as const };
    });
  }

  /**
   * Runs `body` while no other change to the repository at `top` (its worktree list, its
   * branches, its first commit) does: git's own ref and admin-directory locks would make
   * concurrent ones fail at random.
   */
  inRepository<T>(top: string, body: () => Promise<T>): Promise<T> {
    return this.repositoryLock.run(top, body);
  }

  /** Removes a directory that may or may not be a registered worktree, and prunes what it leaves. The caller holds the repository. */
  async clear(top: string | null, target: string): Promise<void> {
    if (top !== null) {
      await gitSucceeds(['worktree', 'remove', '--force', '--force', target], {
        cwd: top,
        timeoutMs: QUICK_TIMEOUT_MS,
      }).catch(() => false);
    }
    await fs.rm(target, { force: true, recursive: true });
    if (top !== null) {
      await gitSucceeds(['worktree', 'prune'], { cwd: top, timeoutMs: QUICK_TIMEOUT_MS }).catch(() => false);
    }
  }

  /** git's directories of a work tree (absolute), or null when it is not one. */
  async gitDirectories(cwd: string): Promise<GitDirectories | null> {
    try {
      const out = await git(['rev-parse', '--path-format=absolute', '--git-dir', '--git-common-dir'], {
        cwd,
        timeoutMs: QUICK_TIMEOUT_MS,
      });
      const [gitDir, commonDir] = out.stdout.trim().split('\n');
      return gitDir && commonDir
        ? { commonDir: await fs.realpath(commonDir), gitDir: await fs.realpath(gitDir) }
        : null;
    } catch {
      return null;
    }
  }

  /** Whether `target` is the top of a work tree git knows. */
  async isWorktree(target: string): Promise<boolean> {
    try {
      const top = (
        await git(['rev-parse', '--show-toplevel'], { cwd: target, timeoutMs: QUICK_TIMEOUT_MS })
      ).stdout.trim();
      return (await fs.realpath(top)) === (await fs.realpath(target));
    } catch {
      return false;
    }
  }

  branchExists(top: string, branch: string): Promise<boolean> {
    return gitSucceeds(['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], {
      cwd: top,
      timeoutMs: QUICK_TIMEOUT_MS,
    });
  }

  /** The commit a ref names, or null when git knows none (an option-looking ref is never asked). */
  async resolveCommit(cwd: string, ref: string): Promise<string | null> {
    if (ref.startsWith('-')) {
      return null;
    }
    const out = await git(['rev-parse', '--verify', '-q', `${ref}^{commit}`], {
      cwd,
      okCodes: [0, 1, 128],
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const sha = out.stdout.trim();
    return out.code === 0 && sha !== '' ? sha : null;
  }

  /** The configured links, as relative paths without a trailing slash. */
  links(): string[] {
    return this.configuration.get('worktreeLinks').map((link) => path.normalize(link).replace(/\/+$/, ''));
  }

  /**
   * Without git-lfs, a repository whose attributes name the LFS filter cannot be checked out at
   * all (its smudge filter is a missing program): check out the pointer files instead, and give
   * the agent's git the same settings so that its `git status` works too.
   */
  async lfsEnvironment(top: string): Promise<Record<string, string>> {
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
}

/**
 * The first `max` bytes of a regular file as text; '' for anything else. Opened without following
 * a symlink and without blocking (a FIFO an agent put there would hold a plain open forever).
 */
async function readStart(file: string, max: number): Promise<string> {
  const handle = await fs
    .open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK)
    .catch(() => null);
  if (!handle) {
    return '';
  }
  try {
    if (!(await handle.stat()).isFile()) {
      return '';
    }
    const buffer = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buffer, 0, max, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  } finally {
    await handle.close();
  }
}
