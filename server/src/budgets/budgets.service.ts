import { Inject, Injectable, Logger } from '@nestjs/common';

import { TERMINAL_REQUIREMENT_STATUSES } from '@libs/contracts';
import type { EventActor, ManagerEvent } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { OnDomainEvent } from '../core/domain-events';
import { conflict } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementEntity } from '../requirements/requirement.entity';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService } from '../requirements/requirements.service';
import type { UpdateRequirementDto } from '../requirements/dto/update-requirement.dto';
import type { AgentRunEntity } from '../runs/agent-run.entity';
import { RequirementActors } from '../runs/requirement-actors.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import { blockerOf, budgetOf, isReached } from '../requirements/budget-rules';
import { startPolicy } from '../requirements/start-policies';

/**
 * What a change of budget, or of what a tree spent, does beyond storing it, in the Requirement's
 * actor: running runs watch the new budget; a budget-paused session that no budget keeps asleep
 * any more is resumed (a run on its pending input, or just unpaused when nothing is pending); an
 * idle session whose budget (its own, or an ancestor's) is now spent is paused at once, so that no
 * trigger or timer wakes it. A person's change reaches down the tree: the Requirements below that
 * the budget paused are resumed the same way (issue 25 §4).
 */
@Injectable()
export class BudgetsService {
  private readonly logger = new Logger(BudgetsService.name);

  constructor(
    private readonly actors: RequirementActors,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly lifecycle: RunLifecycle,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  /** A person's edit that names a budget applies it (see budgetChanged). */
  @OnDomainEvent('requirement.edited')
  edited(id: string, fields: UpdateRequirementDto, actor: EventActor): Promise<RequirementResponseDto | null> {
    return fields.budget === undefined ? Promise.resolve(null) : this.budgetChanged(id, actor);
  }

  /**
   * A run's end charged its ancestors (one `requirement.updated` each, by the run's agent, with
   * no run of its own on the event): an ancestor whose tree that took to its budget pauses, if
   * idle, like its own run had. In team mode only on the runner that runs the ancestor (or any,
   * when none does yet). Idempotent: one already paused is left as it is; one that went away
   * meanwhile (purged) is skipped, so it never holds up the charges after it.
   */
  @OnCommitted(['requirement.updated'])
  async treesCharged(events: ManagerEvent[]): Promise<void> {
    const own = this.runtime.board?.runnerId ?? null;
    const reached = new Set<string>();
    for (const event of events) {
      if (event.type !== 'requirement.updated' || event.actor.kind !== 'agent' || event.runId !== null) {
        continue;
      }
      const { requirement } = event.payload;
      const mine = own === null || requirement.runner === null || requirement.runner.id === own;
      if (mine && requirement.budgetReachedAt === null && isReached(requirement.budget, requirement.treeUsage)) {
        reached.add(requirement.id);
      }
    }
    for (const id of reached) {
      await this.reconsider(id, SYSTEM_ACTOR, false).catch((err: unknown) =>
        this.logger.warn({
          error: (err as Error).message,
          msg: "could not pause a Requirement whose tree reached its budget; its next run's end looks again",
          requirementId: id,
        }),
      );
    }
  }

  /**
   * "Until a person raises the budget or starts it": no agent may start what a budget holds,
   * its own or an ancestor's (the agent that proposed it could otherwise spend past any budget).
   */
  @OnDomainEvent('requirement.starting', { order: startPolicy('budget') })
  async guardStart(tx: UnitOfWork, rows: RequirementRows, actor: EventActor): Promise<void> {
    if (actor.kind === 'human') {
      return;
    }
    const blocker =
      rows.requirement.budgetReachedAt !== null ? rows.requirement : blockerOf(await this.chainOf(tx, rows));
    if (blocker?.id === rows.requirement.id) {
      throw conflict(
        'budget_reached',
        `Requirement ${blocker.id} reached its budget; only a person can start it again, or raise its budget`,
      );
    }
    if (blocker) {
      throw conflict(
        'budget_reached',
        `Requirement ${rows.requirement.id} is below ${blocker.id} ("${blocker.title}"), whose tree reached its budget; only a person can start it, or raise that budget`,
      );
    }
  }

  /**
   * Applies a person's committed change of budget to the Requirement and then to the ones below
   * it that a budget paused; returns the Requirement's newer snapshot when it changed anything.
   */
  async budgetChanged(requirementId: string, actor: EventActor): Promise<RequirementResponseDto | null> {
    const snapshot = await this.reconsider(requirementId, actor, true);
    // Raising a parent's budget resumes the pending work of its descendants the same way.
    for (const id of await this.requirements.budgetPausedBelow(requirementId)) {
      await this.reconsider(id, actor, false).catch((err: unknown) =>
        this.logger.error(`could not apply the budget of ${requirementId} to ${id}: ${(err as Error).message}`),
      );
    }
    return snapshot;
  }

  /**
   * Resumes or pauses one Requirement as its budgets now stand (see the class comment); with
   * `rebudgeted`, its own budget changed and the runs of its tree watch the new one.
   */
  private reconsider(
    requirementId: string,
    actor: EventActor,
    rebudgeted: boolean,
  ): Promise<RequirementResponseDto | null> {
    return this.actors.act(requirementId, async () => {
      const outcome = await this.database.write(
        async (tx): Promise<{ requirement: RequirementResponseDto; run: AgentRunEntity | null } | null> => {
          const rows = await this.requirements.loadForWrite(tx, requirementId);
          const { requirement, session } = rows;
          if (rebudgeted) {
            this.lifecycle.rebudget(requirementId, budgetOf(requirement));
          }
          if (session.state === 'running' || TERMINAL_REQUIREMENT_STATUSES.includes(requirement.status)) {
            return null;
          }
          const blocker = blockerOf(await this.chainOf(tx, rows));
          if (requirement.budgetReachedAt !== null && !blocker) {
            if (session.pendingMessageCount > 0 && !this.lifecycle.stopping) {
              // "Raising it resumes" (issue 18 §1): the run takes every pending message, the
              // stopped run's input and whatever triggers and timers recorded meanwhile.
              return this.lifecycle.openRun(tx, rows, actor);
            }
            const now = this.clock.nowIso();
            this.requirementLifecycle.resumeFromBudget(tx, rows, now);
            const snapshot = toRequirementResponse(requirement, session);
            await this.events.append(tx, {
              actor,
              payload: { requirement: snapshot },
              requirementId,
              sessionId: session.id,
              type: 'requirement.updated',
            });
            return { requirement: snapshot, run: null };
          }
          // A todo Requirement has nothing to wake; its start is guarded.
          if (requirement.budgetReachedAt === null && blocker && requirement.status !== 'todo') {
            return { requirement: await this.lifecycle.pauseForBudget(tx, rows, blocker), run: null };
          }
          return null;
        },
      );
      if (outcome?.run) {
        this.lifecycle.launch(outcome.run);
        this.logger.log({ ...audit(actor), msg: 'budget raised: run started', requirementId, runId: outcome.run.id });
      }
      return outcome?.requirement ?? null;
    });
  }

  /** The Requirement, then its ancestors: the budgets that hold it. */
  private async chainOf(tx: UnitOfWork, rows: RequirementRows): Promise<RequirementEntity[]> {
    return [
      rows.requirement,
      ...(await this.requirements.ancestorsForWrite(tx, rows.requirement)).map((a) => a.requirement),
    ];
  }
}
