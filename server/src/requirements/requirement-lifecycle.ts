import { Injectable } from '@nestjs/common';

import type { RequirementUsage } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import { DependenciesRepository } from './dependencies.repository';
import type { AgentSessionEntity } from './agent-session.entity';
import type { RequirementDependencyEntity } from './requirement-dependency.entity';
import type { RequirementEntity } from './requirement.entity';
import { RequirementRows, RequirementsRepository } from './requirements.repository';

/** The editable columns of a Requirement a person's PATCH may change (see RequirementsService.update). */
export type RequirementEdit = Partial<Omit<RequirementEntity, 'id' | 'status' | 'createdAt' | 'updatedAt'>>;

/**
 * How a run's end leaves the session (RunLifecycle decides it; this records it).
 * - `consumed`: a succeeded run consumed its input up to `toSequence`; `pending` is what is
 *   deliverable after it. Null when nothing was consumed (a failure, a stop).
 * - `next`: `continues` (a new run opens at once in the same unit), `waiting_human` or `failed`
 *   (the session rests and its Requirement waits for confirmation), or `completed` (the
 *   Requirement was cancelled while the run ended).
 * - `paused`: a person's stop or a budget holds the session.
 */
export interface RunEnd {
  consumed: { toSequence: number; pending: number } | null;
  next: 'continues' | 'waiting_human' | 'failed' | 'completed';
  paused: boolean;
}

/**
 * The one writer of the Requirement aggregate (the `requirement` and `agent_session` rows): other
 * features say what happened (`markRunning`, `recordRunEnd`, `pauseOnBudget`, …) and this says
 * which columns that changes. Every intent takes the write unit and the rows it loaded
 * (`RequirementsService.loadForWrite`), and stages its change in that unit, so it commits or rolls
 * back with the rest of the caller's work; `now` is the caller's, so one unit's changes carry one
 * time. Status and session-state changes are checked against the table in requirement-state.ts
 * (by RequirementsRepository): an intent names only transitions that table has.
 */
@Injectable()
export class RequirementLifecycle {
  constructor(
    private readonly repository: RequirementsRepository,
    private readonly dependencies: DependenciesRepository,
  ) {}

  /** Stages both rows of a new Requirement (invariant 1: created together). */
  create(tx: UnitOfWork, rows: RequirementRows): void {
    this.repository.insert(tx, rows);
  }

  /** A person's PATCH: the plain fields (never the status), and the session's provider with the Requirement's. */
  edit(tx: UnitOfWork, { requirement, session }: RequirementRows, fields: RequirementEdit, now: string): void {
    this.repository.changeRequirement(tx, requirement, { ...fields, updatedAt: now });
    if (fields.provider !== undefined && fields.provider !== session.provider) {
      this.repository.changeSession(tx, session, { provider: fields.provider, updatedAt: now });
    }
  }

  /** Something the Requirement's snapshot shows changed beside its rows (its dependencies): its update time moves. */
  touch(tx: UnitOfWork, requirement: RequirementEntity, now: string): void {
    this.repository.changeRequirement(tx, requirement, { updatedAt: now });
  }

  /** What the tracker says of its issue now (`source`, JSON): any status, since the issue lives its own life. */
  recordSource(tx: UnitOfWork, requirement: RequirementEntity, source: string, now: string): void {
    this.repository.changeRequirement(tx, requirement, { source, updatedAt: now });
  }

  /** todo → cancelled: withdrawn before it ever ran (DELETE). The idle session stays as it is. */
  withdraw(tx: UnitOfWork, requirement: RequirementEntity, now: string): void {
    this.repository.changeRequirement(tx, requirement, { status: 'cancelled', updatedAt: now });
  }

  /**
   * → cancelled, once started. The session completes now unless a run is still ending: that run's
   * end completes it (`recordRunEnd` with `next: 'completed'`).
   */
  cancel(tx: UnitOfWork, { requirement, session }: RequirementRows, runActive: boolean, now: string): void {
    this.repository.changeRequirement(tx, requirement, { status: 'cancelled', updatedAt: now });
    if (!runActive) {
      this.repository.changeSession(tx, session, { pausedAt: null, state: 'completed', updatedAt: now });
    }
  }

  /**
   * waiting_confirmation → done, the session completes. Accepted work is not waiting on its budget
   * any more, nor paused: a reply or related message reopening it starts a run.
   */
  confirm(tx: UnitOfWork, { requirement, session }: RequirementRows, now: string): void {
    this.repository.changeRequirement(tx, requirement, {
      budgetReachedAt: null,
      completedAt: now,
      status: 'done',
      updatedAt: now,
    });
    this.repository.changeSession(tx, session, { pausedAt: null, state: 'completed', updatedAt: now });
  }

  /**
   * A run opens: → doing, the session → running. Whatever opens a run was allowed to, so a pause
   * (a stop's or a budget's) ends here, and a reopened done Requirement is no longer completed.
   */
  markRunning(
    tx: UnitOfWork,
    { requirement, session }: RequirementRows,
    now: string,
    runnerId: string | null = null,
  ): void {
    // On a board, the first run's runner is the one it runs on from then on (docs/team-mode.md).
    const runner = runnerId !== null && requirement.runnerId === null ? { runnerId } : {};
    this.repository.changeRequirement(tx, requirement, {
      budgetReachedAt: null,
      completedAt: null,
      status: 'doing',
      updatedAt: now,
      ...runner,
    });
    this.repository.changeSession(tx, session, { pausedAt: null, state: 'running', updatedAt: now });
  }

  /** A failed or timed-out run's error, on the session before the message that says so (its snapshot then says why). */
  recordRunError(tx: UnitOfWork, session: AgentSessionEntity, error: string | null): void {
    this.repository.changeSession(tx, session, { lastError: error });
  }

  /** A closed run's own usage added: the Requirement's own and its tree's totals as they now stand. */
  recordUsage(tx: UnitOfWork, requirement: RequirementEntity, usage: RequirementUsage, tree: RequirementUsage): void {
    this.repository.changeRequirement(tx, requirement, {
      treeUsageCostUsd: tree.costUsd,
      treeUsageInputTokens: tree.inputTokens,
      treeUsageOutputTokens: tree.outputTokens,
      usageCostUsd: usage.costUsd,
      usageInputTokens: usage.inputTokens,
      usageOutputTokens: usage.outputTokens,
    });
  }

  /** A descendant's run spent in this ancestor's tree (issue 25 §4): its tree totals as they now stand. */
  recordTreeUsage(tx: UnitOfWork, requirement: RequirementEntity, tree: RequirementUsage, now: string): void {
    this.repository.changeRequirement(tx, requirement, {
      treeUsageCostUsd: tree.costUsd,
      treeUsageInputTokens: tree.inputTokens,
      treeUsageOutputTokens: tree.outputTokens,
      updatedAt: now,
    });
  }

  /** A closing run took the Requirement to a budget (its own or an ancestor's); the run's end pauses the session. */
  markBudgetReached(tx: UnitOfWork, requirement: RequirementEntity, now: string): void {
    this.repository.changeRequirement(tx, requirement, { budgetReachedAt: now });
  }

  /**
   * A run's end (RunLifecycle.closeRun), after its usage: the session's consumed input, pause and
   * state. Unless the session continues or was cancelled, doing → waiting_confirmation.
   */
  recordRunEnd(tx: UnitOfWork, { requirement, session }: RequirementRows, end: RunEnd, now: string): void {
    const change: Partial<AgentSessionEntity> = {};
    if (end.consumed) {
      // Invariant 4: success consumes exactly the captured boundary, nothing that came later.
      change.lastConsumedMessageSequence = end.consumed.toSequence;
      change.pendingMessageCount = end.consumed.pending;
      change.lastError = null;
    }
    if (end.paused) {
      change.pausedAt = now;
    }
    if (end.next === 'completed') {
      Object.assign(change, { pausedAt: null, state: 'completed' });
    } else if (end.next !== 'continues') {
      change.state = end.next;
      this.repository.changeRequirement(tx, requirement, { status: 'waiting_confirmation', updatedAt: now });
    }
    this.repository.changeSession(tx, session, { ...change, updatedAt: now });
  }

  /**
   * A run the manager lost in a stop (invariant 11, StartupReconciler): the session failed with
   * `error`, and a doing Requirement waits for confirmation; its input stays pending for the retry.
   */
  recordRunLost(tx: UnitOfWork, { requirement, session }: RequirementRows, error: string, now: string): void {
    this.repository.changeSession(tx, session, { lastError: error, state: 'failed', updatedAt: now });
    if (requirement.status === 'doing') {
      this.repository.changeRequirement(tx, requirement, { status: 'waiting_confirmation', updatedAt: now });
    }
  }

  /**
   * Team mode's move: the Requirement runs on `runnerId` from now on. The CLI's own session stays
   * in the old runner's home, so the next run starts a new one (told the conversation so far).
   */
  moveToRunner(tx: UnitOfWork, { requirement, session }: RequirementRows, runnerId: string, now: string): void {
    this.repository.changeRequirement(tx, requirement, { runnerId, updatedAt: now });
    this.repository.changeSession(tx, session, { nativeSessionId: null, updatedAt: now });
  }

  /** The agent CLI named its own session id: the next run resumes it. */
  recordNativeSession(tx: UnitOfWork, session: AgentSessionEntity, nativeSessionId: string, now: string): void {
    this.repository.changeSession(tx, session, { nativeSessionId, updatedAt: now });
  }

  /**
   * A message joins the conversation: the session's counter gives its sequence (gap-free in commit
   * order, the write path being serialized), and one deliverable to the agent is pending. Returns
   * the sequence.
   */
  recordMessage(tx: UnitOfWork, session: AgentSessionEntity, deliverToRd: boolean, now: string): number {
    const sequence = session.lastMessageSequence + 1;
    this.repository.changeSession(tx, session, {
      lastMessageSequence: sequence,
      pendingMessageCount: session.pendingMessageCount + (deliverToRd ? 1 : 0),
      updatedAt: now,
    });
    return sequence;
  }

  /** A budget holds the Requirement (its own or an ancestor's tree's): `budgetReachedAt` and the session's pause. */
  pauseOnBudget(tx: UnitOfWork, { requirement, session }: RequirementRows, now: string): void {
    this.repository.changeRequirement(tx, requirement, { budgetReachedAt: now, updatedAt: now });
    this.repository.changeSession(tx, session, { pausedAt: now, updatedAt: now });
  }

  /** A raised budget no longer holds it, with nothing pending to run: the pause ends, the session rests. */
  resumeFromBudget(tx: UnitOfWork, { requirement, session }: RequirementRows, now: string): void {
    this.repository.changeRequirement(tx, requirement, { budgetReachedAt: null, updatedAt: now });
    this.repository.changeSession(tx, session, { pausedAt: null, updatedAt: now });
  }

  /**
   * Stages the removal of these Requirements past their retention (RetentionService); their
   * session, conversation, attachment rows and runs go with them (ON DELETE CASCADE).
   */
  async purge(tx: UnitOfWork, ids: string[]): Promise<void> {
    // No cached dependency row may outlive them (theirs, or their dependents' on them).
    await this.dependencies.forgetPurged(tx, ids);
    this.repository.delete(tx, ids);
  }

  /**
   * What a Requirement waits for (its `requirement_dependency` rows, part of the aggregate: every
   * snapshot shows them), replaced as a whole; the dependencies feature decides what they are.
   */
  async replaceDependencies(
    tx: UnitOfWork,
    { requirement }: RequirementRows,
    staged: RequirementDependencyEntity[],
  ): Promise<void> {
    await this.dependencies.replace(tx, requirement.id, staged);
    requirement.dependsOn = staged;
  }

  /** One dependency of `dependentId` met, cancelled or told (the dependencies feature's rules say which). */
  changeDependency(
    tx: UnitOfWork,
    dependentId: string,
    dependencyId: string,
    set: Partial<RequirementDependencyEntity>,
  ): Promise<RequirementDependencyEntity | null> {
    return this.dependencies.change(tx, dependentId, dependencyId, set);
  }
}
