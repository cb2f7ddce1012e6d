import { Injectable, Logger, OnModuleInit } from '@nestjs/common';

import { TERMINAL_REQUIREMENT_STATUSES } from '@libs/contracts';
import type { EventActor } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { conflict } from '../core/errors/domain-error';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementsRepository } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import type { AgentRunEntity } from '../runs/agent-run.entity';
import { RequirementActors } from '../runs/requirement-actors.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import { budgetOf, budgetReachedMessage, isReached, usageOf } from './budget-rules';

/**
 * What a person's change of budget does beyond storing it (PATCH /requirements/:id, after its
 * commit, in the Requirement's actor): a running run watches the new budget; a budget-paused
 * session whose new budget is not spent is resumed (a run on its pending input, or just unpaused
 * when nothing is pending); a budget lowered under what was already spent pauses an idle session
 * at once, so that no trigger or timer wakes it.
 */
@Injectable()
export class BudgetsService implements OnModuleInit {
  private readonly logger = new Logger(BudgetsService.name);

  constructor(
    private readonly actors: RequirementActors,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly lifecycle: RunLifecycle,
    private readonly messages: MessagesService,
    private readonly requirementRows: RequirementsRepository,
    private readonly requirements: RequirementsService,
  ) {}

  onModuleInit(): void {
    this.requirements.onUpdated((id, fields, actor) => (fields.budget === undefined ? Promise.resolve(null) : this.budgetChanged(id, actor)));
    // "Until a person raises the budget or starts it": the agent that proposed it may not spend past it.
    this.lifecycle.guardStart(async (_tx, { requirement }, actor) => {
      if (requirement.budgetReachedAt !== null && actor.kind !== 'human') {
        throw conflict('budget_reached', `Requirement ${requirement.id} reached its budget; only a person can start it again, or raise its budget`);
      }
    });
  }

  /** Applies a committed change of budget; returns the newer snapshot when it changed anything. */
  budgetChanged(requirementId: string, actor: EventActor): Promise<RequirementResponseDto | null> {
    return this.actors.act(requirementId, async () => {
      const outcome = await this.database.write(async (tx): Promise<{ requirement: RequirementResponseDto; run: AgentRunEntity | null } | null> => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        const { requirement, session } = rows;
        const budget = budgetOf(requirement);
        const reached = isReached(budget, usageOf(requirement));
        if (session.state === 'running') {
          this.lifecycle.rewatchBudget(requirementId, budget);
          return null;
        }
        if (TERMINAL_REQUIREMENT_STATUSES.includes(requirement.status) || requirement.status === 'todo') {
          return null;
        }
        const now = this.clock.nowIso();
        if (requirement.budgetReachedAt !== null && !reached) {
          if (session.pendingMessageCount > 0 && !this.lifecycle.stopping) {
            // "Raising it resumes" (issue 18 §1): the run takes every pending message, the
            // stopped run's input and whatever triggers and timers recorded meanwhile.
            return this.lifecycle.openRun(tx, rows, actor);
          }
          this.requirementRows.changeRequirement(tx, requirement, { budgetReachedAt: null, updatedAt: now });
          this.requirementRows.changeSession(tx, session, { pausedAt: null, updatedAt: now });
        } else if (requirement.budgetReachedAt === null && reached) {
          this.requirementRows.changeRequirement(tx, requirement, { budgetReachedAt: now, updatedAt: now });
          this.requirementRows.changeSession(tx, session, { pausedAt: now, updatedAt: now });
          const body = budgetReachedMessage(budget ?? { maxCostUsd: null, maxTokens: null }, usageOf(requirement), false);
          const { requirement: snapshot } = await this.messages.append(tx, rows, { author: 'system', body, deliverToRd: false }, SYSTEM_ACTOR);
          return { requirement: snapshot, run: null };
        } else {
          return null;
        }
        const snapshot = toRequirementResponse(requirement, session);
        await this.events.append(tx, { actor, payload: { requirement: snapshot }, requirementId, sessionId: session.id, type: 'requirement.updated' });
        return { requirement: snapshot, run: null };
      });
      if (outcome?.run) {
        this.lifecycle.launch(outcome.run);
        this.logger.log({ ...audit(actor), msg: 'budget raised: run started', requirementId, runId: outcome.run.id });
      }
      return outcome?.requirement ?? null;
    });
  }
}
