import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import type { Subscription } from 'rxjs';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { AgentSandbox } from '../agents/agent-sandbox';
import { endMarkedWith, workspaceMarkerPrefix } from '../agents/process-tree';
import { RunLimits } from '../agents/run-limits';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { git } from '../core/git/git';
import { RUNTIME, Runtime } from '../core/runtime';
import { SecretsService } from '../core/secrets/secrets.service';
import { NetworkService, type RunNetwork } from '../network/network.service';
import { createAgentRepository } from './agent-repository';
import { type HookContext, runHook } from './worktree-commands';
import { provideFiles } from './worktree-files';
import { type PooledCopy, poolIndexPath, readPoolManifest, writePoolManifest } from './worktree-pool-manifest';
import { WorktreeRecords } from './worktree-records.service';
import { WorktreesRepository } from './worktrees.repository';
import {
  CREATE_TIMEOUT_MS,
  GitDirectories,
  GitWorkspace,
  QUICK_TIMEOUT_MS,
  WorkspaceGit,
} from './workspace-git.service';

/** How often the base is looked at: a commit on it makes the pool's copies stale. */
const BASE_CHECK_MS = 15_000;
/** A copy whose making failed is not tried again for the same base and recipe before this. */
const RETRY_AFTER_MS = 10 * 60_000;
const RETRY_MAX_MS = 6 * 60 * 60_000;
/** How long the manager's stop waits for a copy being made to give up. */
const SHUTDOWN_WAIT_MS = 5_000;

/** What the pool should hold now: its size, and what its copies are made of. */
interface Wanted {
  size: number;
  facts: { repo: GitWorkspace; git: GitDirectories };
  baseRef: string;
  baseSha: string;
  subdirectory: string | null;
  /** What the recipe was made of, read once: a change during a make does not mislabel the copy. */
  setupCommand: string | null;
  links: string[];
  recipe: string;
}

/** The pool as the API shows it. */
export interface PoolStatus {
  size: number;
  copies: Array<Pick<PooledCopy, 'path' | 'state' | 'baseRef' | 'baseSha' | 'madeAt' | 'setupAt'>>;
  lastFailure: { at: string; message: string } | null;
  notPooled: string | null;
}

/**
 * Prepared working copies (issue 48 §6): `worktreePool` agent repositories made in the background
 * at the base branch's tip, their `.worktreeinclude` files, links and setup command done, so a
 * Requirement that starts takes one (its branch written into it) instead of waiting for its
 * setup. One is made at a time, in the agents' sandbox and network like a run's setup. A copy
 * goes stale when the base moves or the setup command, links or subfolder change; stale and
 * surplus copies are torn down and made again. A copy keeps its folder when taken: what setup
 * wrote may name it (a virtualenv does).
 */
@Injectable()
export class WorktreePool implements OnApplicationBootstrap, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger(WorktreePool.name);
  /** The list, as `worktree-pool.json` holds it; changed and written in one synchronous step. */
  private copies: PooledCopy[] = [];
  /** Copies taken off the list whose Requirement's row does not name them yet: still the pool's to keep from the sweeper. */
  private readonly handedOut = new Set<string>();
  private loading: Promise<void> | null = null;
  private filling: Promise<void> | null = null;
  /** Something changed while the pool was being filled: look again before stopping. */
  private again = false;
  private failure: { key: string; at: number; message: string; iso: string; count: number } | null = null;
  /** Why the pool makes nothing now though it should (a setup that needs a Requirement, a detached HEAD). */
  private unpooled: string | null = null;
  private readonly markerPrefix: string;
  private readonly shutdown = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private subscription: Subscription | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly environment: AgentEnvironmentService,
    private readonly limits: RunLimits,
    private readonly network: NetworkService,
    private readonly records: WorktreeRecords,
    private readonly repository: WorktreesRepository,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly sandbox: AgentSandbox,
    private readonly secrets: SecretsService,
    private readonly workspace: WorkspaceGit,
  ) {
    this.markerPrefix = workspaceMarkerPrefix('pool', runtime.paths.home, runtime.paths.root);
  }

  onApplicationBootstrap(): void {
    this.kick();
    this.timer = setInterval(() => this.kick(), BASE_CHECK_MS);
    this.timer.unref();
    this.subscription = this.configuration.changes$.subscribe(() => this.kick());
  }

  /**
   * A setup in progress ends with the manager (its copy, still `filling`, is cleared at the next
   * start); the filler is waited for a moment. A git of it still checking files out is left to
   * finish on its own (it has its time limit), in a folder the next start clears.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.shutdown.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.filling,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
  }

  /** Every folder the pool owns, those being handed to a Requirement included (the sweeper leaves them alone). */
  async paths(): Promise<string[]> {
    await this.load();
    return [...this.copies.map((copy) => copy.path), ...this.handedOut];
  }

  /** The Requirement's row names the copy it took (WorktreeMaker): the folder is its from now on. */
  handedOver(copy: PooledCopy): void {
    this.handedOut.delete(copy.path);
  }

  /**
   * The copies as they are. Asking also has the base looked at now (a commit on it makes them
   * stale) rather than at the next poll, unless the filler is at work: it looks when it is done.
   */
  async status(): Promise<PoolStatus> {
    await this.load();
    if (this.filling === null) {
      this.kick();
    }
    return {
      copies: this.copies.map(({ baseRef, baseSha, madeAt, path: where, setupAt, state }) => ({
        baseRef,
        baseSha,
        madeAt,
        path: where,
        setupAt,
        state,
      })),
      lastFailure: this.failure === null ? null : { at: this.failure.iso, message: this.failure.message },
      notPooled: this.unpooled,
      size: this.configuration.get('worktreePool'),
    };
  }

  /**
   * A ready copy made at exactly this base, with today's recipe, for a Requirement to make its own
   * (it leaves the list first: a crash after leaves an orphan, never a copy two own); null when
   * there is none. Either way the pool is filled again behind it. The pool never fails a start:
   * a list it cannot read or write is no copy, and the start makes its own.
   */
  async take(base: { ref: string; sha: string; subdirectory: string | null }): Promise<PooledCopy | null> {
    try {
      return await this.takeNow(base);
    } catch (err) {
      this.logger.warn(`no prepared worktree could be taken: ${(err as Error).message}`);
      return null;
    }
  }

  private async takeNow(base: { ref: string; sha: string; subdirectory: string | null }): Promise<PooledCopy | null> {
    await this.load();
    const recipe = this.recipe(base.subdirectory);
    const copy = this.copies.find(
      (candidate) =>
        candidate.state === 'ready' &&
        candidate.baseRef === base.ref &&
        candidate.baseSha === base.sha &&
        candidate.recipe === recipe,
    );
    if (copy !== undefined) {
      // Written before it is handed out: a list that cannot be written keeps the copy the pool's.
      writePoolManifest(
        this.runtime.paths.dataDirectory,
        this.copies.filter((candidate) => candidate !== copy),
      );
      this.handedOut.add(copy.path);
      this.copies = this.copies.filter((candidate) => candidate !== copy);
    }
    this.kick();
    return copy ?? null;
  }

  /**
   * The list as it was left: a copy still `filling` (a setup the last manager did not finish) is
   * cleared with whatever it left running, and a ready one whose folder is gone is forgotten.
   */
  private load(): Promise<void> {
    // A load that failed (the list unwritable a moment) is tried again by the next caller.
    this.loading ??= (async () => {
      const listed = readPoolManifest(this.runtime.paths.dataDirectory);
      await endMarkedWith(this.markerPrefix);
      const kept: PooledCopy[] = [];
      for (const copy of listed) {
        const present = (await fs.lstat(path.join(copy.path, '.git')).catch(() => null))?.isDirectory() ?? false;
        if (copy.state === 'ready' && present) {
          kept.push(copy);
        } else {
          await this.remove(copy);
        }
      }
      this.copies = kept;
      if (listed.length !== kept.length) {
        this.write(kept);
      }
    })().catch((err: unknown) => {
      this.loading = null;
      throw err;
    });
    return this.loading;
  }

  private write(copies: PooledCopy[]): void {
    this.copies = copies;
    writePoolManifest(this.runtime.paths.dataDirectory, copies);
  }

  /** Fills the pool in the background (one filler at a time; a kick meanwhile makes it look again). */
  private kick(): void {
    if (this.shutdown.signal.aborted) {
      return;
    }
    if (this.filling !== null) {
      this.again = true;
      return;
    }
    this.filling = this.fill()
      .catch((err: unknown) => this.logger.warn(`the worktree pool could not be filled: ${(err as Error).message}`))
      .finally(() => {
        this.filling = null;
      });
  }

  private async fill(): Promise<void> {
    await this.load();
    for (;;) {
      this.again = false;
      const asked = await this.wanted();
      if (asked === 'unknown' || this.shutdown.signal.aborted) {
        // A git that failed this once says nothing about the copies: they stay.
        return;
      }
      const wanted = asked === 'off' ? null : asked;
      const matching = (copy: PooledCopy) =>
        wanted !== null &&
        copy.baseRef === wanted.baseRef &&
        copy.baseSha === wanted.baseSha &&
        copy.recipe === wanted.recipe;
      const fresh = this.copies.filter((copy) => copy.state === 'ready' && matching(copy)).slice(0, wanted?.size ?? 0);
      const stale = this.copies.filter((copy) => !fresh.includes(copy));
      if (stale.length > 0) {
        this.write(fresh);
        for (const copy of stale) {
          if (this.shutdown.signal.aborted) {
            // Unlisted already: the next start's sweep removes what is left as an orphan.
            return;
          }
          await this.discard(copy);
        }
      }
      const key = wanted === null ? '' : `${wanted.baseSha}\n${wanted.recipe}`;
      // 10 minutes after a failure, then 20, 40… up to 6 hours while the base and recipe stay the same.
      const failedLately =
        this.failure !== null &&
        this.failure.key === key &&
        Date.now() - this.failure.at < Math.min(RETRY_AFTER_MS * 2 ** (this.failure.count - 1), RETRY_MAX_MS);
      if (wanted !== null && fresh.length < wanted.size && !failedLately && !this.shutdown.signal.aborted) {
        await this.make(wanted, key);
        continue;
      }
      if (!this.again) {
        return;
      }
    }
  }

  /**
   * What the pool should hold: `off` (no pool, in place by configuration, a worktree root that
   * agents could not see), or `unknown` when git cannot say (no repository with a commit now, or
   * a git that failed): the copies then stay as they are.
   */
  private async wanted(): Promise<Wanted | 'off' | 'unknown'> {
    const size = this.configuration.get('worktreePool');
    if (
      size === 0 ||
      this.configuration.get('isolation') !== 'worktree' ||
      this.records.insideDataDirectory(this.workspace.directory)
    ) {
      return 'off';
    }
    const { git: dirs, repo } = await this.workspace.workspaceFacts();
    if (repo === null || dirs === null) {
      return 'unknown';
    }
    const facts = { git: dirs, repo };
    // A new Requirement's base unless it names one: the person's branch. Not a detached HEAD, nor a
    // Requirement's branch the person checked out to look at: its setup would run an agent's files
    // with their secrets, unasked. The copies stay for when they are back on their branch.
    if (repo.branch === null) {
      this.unpooled = 'not pooled while your checkout is on a detached HEAD';
      return 'unknown';
    }
    if (await this.repository.branchOfRequirement(repo.branch)) {
      this.unpooled = `not pooled while your checkout is on ${repo.branch}, a Requirement's branch`;
      return 'unknown';
    }
    const baseRef = repo.branch;
    const baseSha = await this.workspace.resolveCommit(facts.repo.top, baseRef);
    if (baseSha === null) {
      return 'unknown';
    }
    this.unpooled = null;
    const subdirectory = this.records.subdirectory(facts.repo);
    const setupCommand = this.configuration.get('worktreeSetupCommand');
    const links = this.configuration.get('worktreeLinks');
    const needs = await this.needsItsRequirement(facts.repo.top, baseSha, setupCommand);
    if (needs !== null) {
      this.unpooled = `not pooled: the setup command uses ${needs}, which only a Requirement has (set worktreePool to 0 to silence this)`;
      return 'off';
    }
    this.unpooled = null;
    return {
      baseRef,
      baseSha,
      facts,
      links,
      recipe: this.recipe(subdirectory, setupCommand, links),
      setupCommand,
      size,
      subdirectory,
    };
  }

  /** What a copy is prepared with besides its base: a copy of another recipe would not be what a new one is. */
  private recipe(
    subdirectory: string | null,
    setupCommand = this.configuration.get('worktreeSetupCommand'),
    links = this.configuration.get('worktreeLinks'),
  ): string {
    return createHash('sha256')
      .update(JSON.stringify([setupCommand, links, subdirectory]))
      .digest('hex')
      .slice(0, 16);
  }

  /**
   * The variable a setup names that a copy cannot have before a Requirement takes it (its ports,
   * its branch), in the configured command or in `.agent-manager/setup` at the base; null: none.
   * What a setup reads through another script is not seen: the README says to turn the pool off.
   */
  private async needsItsRequirement(top: string, baseSha: string, configured: string | null): Promise<string | null> {
    const text =
      configured ??
      (
        await git(['cat-file', '-p', `${baseSha}:.agent-manager/setup`], {
          cwd: top,
          maxBytes: 256 * 1024,
          okCodes: [0, 128],
          timeoutMs: QUICK_TIMEOUT_MS,
        }).catch(() => null)
      )?.stdout ??
      '';
    return /\bAGENT_MANAGER_(PORT|BRANCH)\b/.exec(text)?.[0] ?? null;
  }

  /** One copy: listed first, then its repository, files and links, then its setup in the agents' sandbox. */
  private async make(wanted: Wanted, key: string): Promise<void> {
    const id = randomBytes(4).toString('hex');
    const target = path.join(this.workspace.directory, `pool-${id}`);
    const started = Date.now();
    const copy: PooledCopy = {
      baseRef: wanted.baseRef,
      baseSha: wanted.baseSha,
      id,
      madeAt: this.clock.nowIso(),
      path: target,
      recipe: wanted.recipe,
      setupAt: null,
      state: 'filling',
    };
    const runId = `pool_${id}`;
    const marker = `${this.markerPrefix}${id}`;
    let caps: HookContext['caps'] = null;
    let tmp: string | null = null;
    let network: RunNetwork | null = null;
    try {
      // Listed before anything of it exists: a crash from here on leaves what the next start clears.
      this.write([...this.copies, copy]);
      caps = this.limits.open(marker);
      tmp = this.sandbox.makeTemporary(runId);
      const { repo, git: dirs } = wanted.facts;
      const lfs = await this.workspace.lfsEnvironment(repo.top);
      const baseBranchSha =
        wanted.baseRef === wanted.baseSha
          ? null
          : await this.workspace.resolveCommit(repo.top, `refs/heads/${wanted.baseRef}`);
      await fs.mkdir(this.workspace.directory, { recursive: true });
      // Detached at the base until a Requirement takes it and names its branch.
      await createAgentRepository({
        base: baseBranchSha === null ? null : { ref: wanted.baseRef, sha: baseBranchSha },
        branch: null,
        env: lfs,
        personCommonDir: dirs.commonDir,
        personTop: repo.top,
        snapshotIndex: poolIndexPath(this.runtime.paths.dataDirectory, id),
        start: wanted.baseSha,
        target,
      });
      if (await fs.stat(path.join(target, '.gitmodules')).catch(() => null)) {
        await git(['submodule', 'update', '--init', '--recursive'], {
          cwd: target,
          env: lfs,
          timeoutMs: CREATE_TIMEOUT_MS,
        });
      }
      await provideFiles(repo.top, target, wanted.links);
      // The network a run's setup has, but no Requirement's own rules: none has it yet.
      network = await this.network.openRun(
        { id: runId, provider: 'codex', requirementId: '', sessionId: null },
        this.environment.baseEnvironment('codex'),
        (blocked) => this.logger.warn(`a prepared worktree's setup was refused ${blocked.host}:${blocked.port}`),
        { unrecorded: true },
      );
      const env: Record<string, string> = {
        ...this.records.environment({ baseRef: wanted.baseRef, branch: '', port: 0, worktree: target }),
        ...lfs,
        AGENT_MANAGER_POOLED: '1',
      };
      // No Requirement yet, so no ports or branch of its own (a setup naming them is not pooled).
      delete env.AGENT_MANAGER_PORT;
      delete env.AGENT_MANAGER_BRANCH;
      const result = await runHook(
        this.sandbox,
        'setup',
        wanted.setupCommand,
        this.setupContext(wanted, { caps, env, marker, network, target, tmp }),
      );
      if (!result.ok) {
        const tail = result.output.trim().split('\n').slice(-5).join('\n');
        throw new Error(`the setup command (${result.command}) ${result.failure}${tail === '' ? '' : `: ${tail}`}`);
      }
      const listed = this.copies.find((candidate) => candidate.id === id);
      if (listed === undefined) {
        await this.remove(copy);
        return;
      }
      this.write(
        this.copies.map((candidate) =>
          candidate.id === id ? { ...candidate, setupAt: this.clock.nowIso(), state: 'ready' } : candidate,
        ),
      );
      this.failure = null;
      this.workspace.forgetDiskUsage();
      this.logger.log({
        baseRef: wanted.baseRef,
        ms: Date.now() - started,
        msg: 'prepared worktree ready',
        setup: result.command,
        worktree: target,
      });
    } catch (err) {
      if (this.shutdown.signal.aborted) {
        // Still listed as filling: the next start clears it.
        return;
      }
      const message = (err as Error).message;
      const count = this.failure?.key === key ? this.failure.count + 1 : 1;
      this.failure = { at: Date.now(), count, iso: this.clock.nowIso(), key, message };
      this.logger.warn(`a prepared worktree could not be made (tried again when the base moves): ${message}`);
      if (this.copies.some((candidate) => candidate.id === id)) {
        this.write(this.copies.filter((candidate) => candidate.id !== id));
      }
      await this.remove(copy);
    } finally {
      if (network !== null) {
        await this.network.closeRun(runId).catch(() => undefined);
      }
      if (caps !== null) {
        await this.limits.close(caps).catch(() => undefined);
      }
      if (tmp !== null) {
        this.sandbox.removeTemporary(runId);
      }
    }
  }

  private setupContext(
    wanted: Wanted,
    run: {
      caps: HookContext['caps'];
      env: Record<string, string>;
      marker: string;
      network: RunNetwork;
      target: string;
      tmp: string;
    },
  ): HookContext {
    return {
      caps: run.caps,
      cwd: path.join(run.target, wanted.subdirectory ?? ''),
      env: run.env,
      git: { kind: 'own', personCommonDir: wanted.facts.git.commonDir },
      marker: run.marker,
      network: run.network,
      pass: this.configuration.get('agentEnvironmentPass'),
      personCheckout: wanted.facts.repo.top,
      secrets: this.secrets.environment(),
      signal: this.shutdown.signal,
      tmp: run.tmp,
      // Made a moment ago at the base commit by the manager; nothing but the person's files has run in it.
      untouched: () => Promise.resolve(true),
      worktree: run.target,
    };
  }

  /** A stale or surplus copy: its teardown command (its setup ran), then its folder and index. */
  private async discard(copy: PooledCopy): Promise<void> {
    const facts = await this.workspace.workspaceFacts();
    if (copy.setupAt !== null && facts.repo !== null && facts.git !== null) {
      const env = this.records.environment({ baseRef: copy.baseRef, branch: '', port: 0, worktree: copy.path });
      delete env.AGENT_MANAGER_PORT;
      delete env.AGENT_MANAGER_BRANCH;
      const teardown = await runHook(this.sandbox, 'teardown', this.configuration.get('worktreeTeardownCommand'), {
        caps: null,
        cwd: path.join(copy.path, this.records.subdirectory(facts.repo) ?? ''),
        env: { ...env, AGENT_MANAGER_POOLED: '1' },
        git: { kind: 'own', personCommonDir: facts.git.commonDir },
        marker: `${this.markerPrefix}${copy.id}-teardown`,
        network: this.configuration.get('networkMode') === 'open' ? { env: {}, sandbox: { kind: 'host' } } : undefined,
        pass: this.configuration.get('agentEnvironmentPass'),
        personCheckout: facts.repo.top,
        secrets: this.secrets.environment(),
        signal: this.shutdown.signal,
        tmp: null,
        untouched: () => Promise.resolve(true),
        worktree: copy.path,
      });
      if (!teardown.ok) {
        this.logger.warn(`the teardown command of the prepared worktree ${copy.path} ${teardown.failure}`);
      }
    }
    await this.remove(copy);
  }

  private async remove(copy: PooledCopy): Promise<void> {
    await this.workspace.clear(null, copy.path).catch(() => undefined);
    await fs.rm(poolIndexPath(this.runtime.paths.dataDirectory, copy.id), { force: true });
    this.workspace.forgetDiskUsage();
  }
}
