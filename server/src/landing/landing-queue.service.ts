import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import type { EventActor, LandingQueue, LandingQueueItem, LocalLandMethod, ManagerEvent } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { DomainError, conflict, invalid, notFound } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, audit } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { RequirementsService } from '../requirements/requirements.service';
import { RUN_ENDS, restingAfter } from '../runs/run-ends';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import type { LandingQueueEntity } from './landing-queue.entity';
import { LANDING_QUEUE_MAX } from './dto/landing.dto';
import { LandingRepository } from './landing.repository';
import { headMoved, listed } from './land-steps';
import { LandingService } from './landing.service';

/** The trigger whose message asks a queued Requirement's agent to rebase. */
export const REBASE_REQUEST_TRIGGER = 'landing.rebase-request';
/** Who lands what the queue lands. */
const QUEUE_ACTOR: EventActor = { id: 'landing-queue', kind: 'system' };
/** Refusals that take a Requirement out of the queue: there is nothing (more) to land. */
const DROPPED = new Set(['nothing_to_land', 'requirement_cancelled', 'not_landable', 'requirement_not_found']);

const toItem = (row: LandingQueueEntity, title: string): LandingQueueItem => ({
  addedAt: row.addedAt,
  conflictPaths: row.conflictPaths,
  expectedHead: row.expectedHead ?? null,
  method: row.method,
  position: row.position,
  reason: row.reason,
  requirementId: row.requirementId,
  state: row.state,
  title,
});

/**
 * The merge queue (issue 28 §3): Requirements a person queued are landed one at a time, in order.
 * When the first one no longer merges onto its base, the queue pauses on it and its agent is
 * asked once (per base and work) to rebase; once its run ends and the radar says its work is
 * clean again, the queue goes on. One pass at a time: anything that may let it go on (a queue
 * change, a run's end, a radar pass) asks for another.
 */
@Injectable()
export class LandingQueueService implements OnApplicationBootstrap {
  private readonly logger = new Logger(LandingQueueService.name);
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly landing: LandingService,
    private readonly repository: LandingRepository,
    private readonly requirements: RequirementsService,
    private readonly triggers: TriggerDeliveryService,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  /** A land a kill interrupted is queued again (the land itself settles what it left). */
  async onApplicationBootstrap(): Promise<void> {
    await this.change(QUEUE_ACTOR, async (tx, rows) => {
      if (!rows.some((r) => r.state === 'landing')) {
        return null;
      }
      return rows.map((row) => {
        if (row.state !== 'landing') {
          return row;
        }
        const set = { state: 'queued' as const, updatedAt: this.clock.nowIso() };
        this.repository.updateQueued(tx, row.requirementId, set);
        return { ...row, ...set };
      });
    });
    void this.kick();
  }

  async list(): Promise<LandingQueue> {
    const rows = await this.repository.queue();
    return { items: rows.map((r) => toItem(r, r.title)) };
  }

  async add(
    requirementId: string,
    method: LocalLandMethod,
    actor: EventActor,
    expectedHead: string | null = null,
  ): Promise<LandingQueue> {
    const requirement = await this.requirements.get(requirementId);
    if (requirement.status === 'cancelled') {
      throw conflict('requirement_cancelled', `"${requirement.title}" is cancelled: its work is not landed`);
    }
    if (requirement.isolation !== 'worktree') {
      throw conflict(
        'not_landable',
        `"${requirement.title}" works in place, in your checkout: there is no branch to land`,
      );
    }
    if (expectedHead !== null) {
      // What the person was shown must be the work now, or the queue would land something else later.
      const now = await this.worktrees.importWork(requirementId);
      if ((now.work ?? now.head) !== expectedHead) {
        throw headMoved(requirement, expectedHead, now.work ?? now.head);
      }
    }
    const queue = await this.change(actor, async (tx, rows) => {
      if (rows.some((r) => r.requirementId === requirementId)) {
        throw conflict('already_queued', `"${requirement.title}" is already in the merge queue`);
      }
      if (rows.length >= LANDING_QUEUE_MAX) {
        throw conflict(
          'queue_full',
          `the merge queue holds ${LANDING_QUEUE_MAX} Requirements already: let some land or remove them first`,
        );
      }
      const now = this.clock.nowIso();
      const row: LandingQueueEntity = {
        addedAt: now,
        conflictPaths: [],
        expectedHead,
        method,
        position: rows.length + 1,
        reason: null,
        requirementId,
        state: 'queued',
        updatedAt: now,
      };
      this.repository.insertQueued(tx, row);
      return [...rows, row];
    });
    this.logger.log({ ...audit(actor), method, msg: 'queued to land', requirementId });
    void this.kick();
    return queue;
  }

  /** The whole queue in its new order: the same Requirements, each once. */
  async reorder(requirementIds: string[], actor: EventActor): Promise<LandingQueue> {
    const queue = await this.change(actor, async (tx, rows) => {
      const queued = new Set(rows.map((r) => r.requirementId));
      if (
        requirementIds.length !== rows.length ||
        new Set(requirementIds).size !== requirementIds.length ||
        !requirementIds.every((id) => queued.has(id))
      ) {
        throw invalid(
          'queue_order_mismatch',
          'requirementIds must name every queued Requirement exactly once (GET /api/landing-queue lists them)',
        );
      }
      const now = this.clock.nowIso();
      return requirementIds.map((id, i) => {
        const row = rows.find((r) => r.requirementId === id) as LandingQueueEntity;
        if (row.position === i + 1) {
          return row;
        }
        this.repository.updateQueued(tx, id, { position: i + 1, updatedAt: now });
        return { ...row, position: i + 1, updatedAt: now };
      });
    });
    this.logger.log({ ...audit(actor), msg: 'merge queue reordered', order: requirementIds });
    void this.kick();
    return queue;
  }

  async remove(requirementId: string, actor: EventActor): Promise<LandingQueue> {
    const queue = await this.change(actor, async (tx, rows) => {
      if (!rows.some((r) => r.requirementId === requirementId)) {
        throw notFound('not_queued', `Requirement ${requirementId} is not in the merge queue`);
      }
      return this.drop(tx, rows, requirementId);
    });
    this.logger.log({ ...audit(actor), msg: 'removed from the merge queue', requirementId });
    void this.kick();
    return queue;
  }

  /**
   * A run ended with its session at rest (a run that continues at once asks again at its own
   * end), or the radar's answers changed: the head may land now.
   */
  @OnCommitted([...RUN_ENDS, 'landing.conflicts.updated'])
  async runsOrRadarChanged(events: ManagerEvent[]): Promise<void> {
    if (
      events.some((event) => event.type === 'landing.conflicts.updated') ||
      restingAfter(events, this.runtime.board?.runnerId ?? null).length > 0
    ) {
      await this.kick();
    }
  }

  /** Asks for a pass; one runs at a time, and one asked for meanwhile runs after it. Resolves when none is left to run. */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass().catch((err: unknown) =>
            this.logger.warn(`the merge queue could not go on: ${(err as Error).message}`),
          );
        } while (this.again);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Settles for tests and shutdown: resolves when no pass runs. */
  async idle(): Promise<void> {
    while (this.running) {
      await this.running;
    }
  }

  /**
   * Lands the first item that can land, in queue order, and starts again from the top after each
   * land (the base moved). One that cannot go on now — paused on a conflict until its agent
   * rebases, or its run still active — is passed over: the next clean one lands instead of
   * waiting behind it (issue 47 §5); it keeps its place and goes on once it can.
   */
  private async pass(): Promise<void> {
    for (;;) {
      let landed = false;
      for (const item of await this.repository.queue()) {
        if (item.state === 'paused' && !(await this.mayResume(item))) {
          continue;
        }
        if ((await this.landOne(item)) === 'gone') {
          landed = true;
          break;
        }
      }
      if (!landed) {
        return;
      }
    }
  }

  /**
   * Tries one item: `gone` when it landed or was dropped, `waits` when it stays queued or paused.
   * A paused item keeps its reason while it is tried again (what needs the person does not flicker
   * away and back with each attempt); an attempt that ends without an answer puts it back as it was.
   */
  private async landOne(item: LandingQueueEntity): Promise<'gone' | 'waits'> {
    await this.setState(item.requirementId, { state: 'landing' });
    let outcome: 'landed' | 'dropped' | 'waits' | null = null;
    try {
      try {
        await this.landing.land(
          item.requirementId,
          { expectedHead: item.expectedHead ?? undefined, markDone: true, method: item.method as LocalLandMethod },
          QUEUE_ACTOR,
        );
        outcome = 'landed';
      } catch (err) {
        outcome = await this.refused(item, err);
      }
      if (outcome !== 'waits') {
        await this.change(QUEUE_ACTOR, async (tx, rows) => this.drop(tx, rows, item.requirementId));
      }
      return outcome === 'waits' ? 'waits' : 'gone';
    } finally {
      if (outcome === null) {
        // The land's own bookkeeping failed: back to what it was, so the next pass tries again.
        await this.setState(item.requirementId, { state: item.state === 'landing' ? 'queued' : item.state }).catch(
          () => undefined,
        );
      }
    }
  }

  /** What a refused land means for its item: dropped (nothing to land), waiting for its run, or paused with the reason. */
  private async refused(item: LandingQueueEntity, err: unknown): Promise<'dropped' | 'waits'> {
    const code = err instanceof DomainError ? err.code : null;
    if (code !== null && DROPPED.has(code)) {
      return 'dropped';
    }
    if (code === 'run_active') {
      await this.setState(item.requirementId, { conflictPaths: [], reason: null, state: 'queued' });
      return 'waits'; // its run's end asks again
    }
    const paths = code === 'land_conflict' ? ((err as DomainError).details ?? []) : [];
    await this.setState(item.requirementId, {
      conflictPaths: paths,
      reason: (err as Error).message,
      state: 'paused',
    });
    if (code === 'land_conflict') {
      await this.askToRebase(item.requirementId, paths).catch((e: unknown) =>
        this.logger.warn(`could not ask ${item.requirementId} to rebase: ${(e as Error).message}`),
      );
    }
    return 'waits';
  }

  /**
   * A paused Requirement goes on once no run is active and the radar found its work clean on the
   * base — and, queued with the work the person was shown, only while its work is still that
   * (else it waits for the person to look again and queue it again).
   */
  private async mayResume(item: LandingQueueEntity): Promise<boolean> {
    const requirement = await this.requirements.find(item.requirementId);
    if (requirement === null || requirement.status === 'cancelled') {
      return true; // the land drops it
    }
    if (
      item.expectedHead !== null &&
      (requirement.worktree?.workSha ?? requirement.worktree?.headSha) !== item.expectedHead
    ) {
      return false;
    }
    // The radar's last answer: after a run it looks again, and an answer that changed asks the
    // queue once more (forcing a pass here would make every pass ask for another).
    return requirement.session.state !== 'running' && requirement.landing.mergesCleanly === true;
  }

  /** One message per (base, work): the queue is waiting for the agent's rebase. */
  private async askToRebase(requirementId: string, paths: string[]): Promise<void> {
    const requirement = await this.requirements.get(requirementId);
    const repo = await this.workspace.gitWorkspace();
    const baseRef = requirement.baseRef ?? '';
    const branch = requirement.worktree?.branch ?? '';
    const [base, head] =
      repo === null
        ? [null, null]
        : await Promise.all([
            this.workspace.resolveCommit(repo.top, baseRef),
            this.workspace.resolveCommit(repo.top, `refs/heads/${branch}`),
          ]);
    const shown = listed(paths);
    await this.triggers.deliver({
      args: { base: (base ?? '').slice(0, 12), baseRef, count: paths.length, paths: shown },
      author: 'system',
      body:
        `Agent Manager: your branch is next in the merge queue, but it conflicts with ${baseRef} at ${(base ?? '').slice(0, 12)} in ${shown}. ` +
        `Rebase ${branch} onto ${baseRef}, resolve the conflicts and commit; the queue lands it once your work merges cleanly.`,
      code: 'landing.rebase_requested',
      metadata: { base, head, paths },
      receiptKey: `${base}:${head}`,
      requirementId,
      source: 'landing',
      triggerId: REBASE_REQUEST_TRIGGER,
    });
  }

  private async setState(requirementId: string, set: Partial<LandingQueueEntity>): Promise<void> {
    await this.change(QUEUE_ACTOR, async (tx, rows) => {
      if (!rows.some((r) => r.requirementId === requirementId)) {
        return null;
      }
      const change = { ...set, updatedAt: this.clock.nowIso() };
      this.repository.updateQueued(tx, requirementId, change);
      return rows.map((r) => (r.requirementId === requirementId ? { ...r, ...change } : r));
    });
  }

  /** Removes one and closes the gap in the positions; returns the rows after. */
  private drop(tx: UnitOfWork, rows: LandingQueueEntity[], requirementId: string): LandingQueueEntity[] | null {
    if (!rows.some((r) => r.requirementId === requirementId)) {
      return null;
    }
    this.repository.deleteQueued(tx, requirementId);
    const now = this.clock.nowIso();
    return rows
      .filter((r) => r.requirementId !== requirementId)
      .map((r, i) => {
        if (r.position === i + 1) {
          return r;
        }
        this.repository.updateQueued(tx, r.requirementId, { position: i + 1, updatedAt: now });
        return { ...r, position: i + 1, updatedAt: now };
      });
  }

  /**
   * One change to the queue in one unit: `body` stages its writes and returns the rows as they
   * will be (null: nothing changed), published with `landing.queue.updated`; returns the queue after.
   */
  private async change(
    actor: EventActor,
    body: (tx: UnitOfWork, rows: LandingQueueEntity[]) => Promise<LandingQueueEntity[] | null>,
  ): Promise<LandingQueue> {
    return this.database.write(async (tx) => {
      const before = await this.repository.queueForWrite(tx);
      const changed = await body(tx, before);
      const items: LandingQueueItem[] = [];
      for (const row of changed ?? before) {
        items.push(
          toItem(
            row,
            (await this.requirements.findForWrite(tx, row.requirementId))?.requirement.title ?? row.requirementId,
          ),
        );
      }
      const queue = { items };
      if (changed !== null) {
        await this.events.append(tx, {
          actor,
          payload: { queue },
          requirementId: null,
          sessionId: null,
          type: 'landing.queue.updated',
        });
      }
      return queue;
    });
  }
}
