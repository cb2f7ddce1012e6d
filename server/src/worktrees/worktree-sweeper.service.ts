import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Subscription } from 'rxjs';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { OnDomainEvent } from '../core/domain-events';
import { RequirementsService } from '../requirements/requirements.service';
import { WorkspaceGit } from './workspace-git.service';
import { WorktreePool } from './worktree-pool.service';
import { WorktreesRepository } from './worktrees.repository';
import { WorktreesService } from './worktrees.service';

const DAY_MS = 24 * 60 * 60 * 1000;
const IDLE_SWEEP_EVERY_MS = 6 * 60 * 60 * 1000;
const IDLE_BATCH = 100;

/**
 * Keeps the disk tidy (issue 14 §4): at start, worktrees whose Requirement no longer exists
 * (a purge that died before removing them, a reviewer's leftover) go; at start, every six hours
 * and when `worktreeIdleDays` changes, done and cancelled Requirements' worktrees without a run
 * for that long go (their work saved as a patch first). Never one with an active run.
 */
@Injectable()
export class WorktreeSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorktreeSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private subscription: Subscription | undefined;
  private idle: Promise<number> | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly pool: WorktreePool,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
  ) {}

  /** A purge takes the worktrees of the purged Requirements with it (after its commit). */
  @OnDomainEvent('requirements.purging')
  async purging(tx: UnitOfWork, ids: string[]): Promise<void> {
    const rows = await this.repository.findMany(await tx.reads(), ids);
    tx.afterCommit(() => void this.worktrees.removePurged(rows));
  }

  onApplicationBootstrap(): void {
    // In the background: removing large trees must not hold up the start.
    void this.sweepOrphans()
      .then(() => this.sweepIdle())
      .catch((err: unknown) => this.logger.warn(`worktree sweep failed: ${(err as Error).message}`));
    this.timer = setInterval(() => void this.sweepIdle(), IDLE_SWEEP_EVERY_MS);
    this.timer.unref();
    let last = this.configuration.get('worktreeIdleDays');
    this.subscription = this.configuration.changes$.subscribe(() => {
      const next = this.configuration.get('worktreeIdleDays');
      if (next !== last) {
        last = next;
        void this.sweepIdle();
      }
    });
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
  }

  /** Directories under this workspace's worktree folder that no Requirement owns; resolves with how many went. */
  async sweepOrphans(): Promise<number> {
    const directory = this.workspace.directory;
    const entries = await fs.readdir(directory).catch(() => [] as string[]);
    if (entries.length === 0) {
      return 0;
    }
    // The prepared copies (issue 48 §6) are the pool's.
    const live = new Set([...(await this.repository.livePaths()), ...(await this.pool.paths())]);
    const top = (await this.workspace.gitWorkspace())?.top ?? null;
    let removed = 0;
    for (const entry of entries) {
      const target = path.join(directory, entry);
      if (!live.has(target)) {
        await this.workspace.clear(top, target);
        removed += 1;
      }
    }
    if (removed > 0) {
      this.logger.log({ msg: 'orphaned worktrees removed', worktrees: removed });
    }
    return removed;
  }

  /** Done or cancelled Requirements' worktrees idle for `worktreeIdleDays`; resolves with how many went. */
  sweepIdle(): Promise<number> {
    this.idle ??= this.removeIdle()
      .catch((err: unknown) => {
        this.logger.warn(`idle worktree sweep failed: ${(err as Error).message}`);
        return 0;
      })
      .finally(() => {
        this.idle = null;
      });
    return this.idle;
  }

  private async removeIdle(): Promise<number> {
    const before = new Date(
      this.clock.now().getTime() - this.configuration.get('worktreeIdleDays') * DAY_MS,
    ).toISOString();
    let removed = 0;
    for (const row of await this.repository.idleSince(before, IDLE_BATCH)) {
      const requirement = await this.requirements.find(row.requirementId);
      if (
        requirement === null ||
        (requirement.status !== 'done' && requirement.status !== 'cancelled') ||
        requirement.session.state === 'running'
      ) {
        continue;
      }
      await this.worktrees
        .saveAndRemove(row.requirementId, 'idle')
        .then(() => (removed += 1))
        .catch((err: unknown) =>
          this.logger.warn(`could not remove the idle worktree ${row.path}: ${(err as Error).message}`),
        );
    }
    return removed;
  }
}
