import { Injectable, Logger } from '@nestjs/common';

import type { EventActor, RequirementBudget, RequirementWarning } from '@libs/contracts';

import { AgentCaller, assertInScope } from '../auth/agent-scope.decorator';
import { budgetOf, childBudget, isReached, plusUsage, roomUnder, treeUsageOf } from '../requirements/budget-rules';
import type { BudgetInputDto } from '../requirements/dto/budget.dto';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict, invalid } from '../core/errors/domain-error';
import { audit } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { ConversationDelivery } from '../conversation/conversation-delivery.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import {
  AgentRequirementActionDto,
  AgentRequirementActionResponseDto,
  ProposeRequirementDto,
  RelatedMessageDto,
  RelatedMessageResponseDto,
  RelatedRequirementsDto,
} from './dto/agent-requirements.dto';

/**
 * What an RD agent may do to other Requirements: propose follow-ups (its children), act on
 * the children it proposed, and talk to its direct parent and children. Every call names the
 * caller's own Requirement and session, which must match its run credential (403 otherwise);
 * the relationship rules come after (409). The owner's token may act for any Requirement it
 * names, under the same relationship rules. Actions go through the same state machine as a
 * person's.
 */
@Injectable()
export class AgentRequirementsService {
  private readonly logger = new Logger(AgentRequirementsService.name);

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly conversation: ConversationDelivery,
    private readonly messages: MessagesService,
    private readonly requirements: RequirementsService,
    private readonly runs: RunLifecycle,
  ) {}

  /**
   * A child of the proposing session's Requirement. An agent's child gets at most the budget its
   * parent's tree has left (see budgetForChild); `warnings` says when its request was lowered.
   */
  async propose(
    dto: ProposeRequirementDto,
    caller: AgentCaller,
    actor: EventActor,
  ): Promise<{ requirement: RequirementResponseDto; warnings: RequirementWarning[] }> {
    assertInScope(caller, { sessionId: dto.sourceSessionId });
    let parentId: string;
    if (caller.kind === 'run') {
      parentId = dto.parentRequirementId ?? caller.scope.requirementId;
      if (parentId !== caller.scope.requirementId) {
        throw invalid(
          'parent_mismatch',
          `a proposed Requirement's parent is the proposing session's Requirement ${caller.scope.requirementId}, not ${parentId}`,
        );
      }
    } else if (dto.parentRequirementId === undefined) {
      throw invalid(
        'parent_required',
        "with the owner's token, name the parent Requirement (parentRequirementId) the proposal is for",
      );
    } else {
      parentId = dto.parentRequirementId;
      await this.sourceOf(parentId, dto.sourceSessionId);
    }
    const parent = await this.requirements.get(parentId);
    if (caller.kind === 'run' && dto.dependsOn !== undefined && dto.dependsOn.length > 0) {
      // Only its own tree: a title or an id's existence outside it is none of the agent's business,
      // so one it cannot see is refused exactly like one that does not exist.
      const visible = await this.requirements.treeIds(parentId);
      const unseen = dto.dependsOn.find((d) => !visible.has(d.requirementId));
      if (unseen) {
        throw invalid(
          'dependency_not_found',
          `dependsOn names Requirement ${unseen.requirementId}, which does not exist in this agent's tree (its Requirement, those above it and those proposed below it)`,
        );
      }
    }
    // Checked before anything is written: a refused proposal leaves nothing behind.
    const { budget, clamped } =
      caller.kind === 'run' ? await this.budgetForChild(parentId, dto.budget) : { budget: dto.budget, clamped: false };
    // Without a provider of its own, the child runs like its parent (same agent, model, effort).
    const inherits = dto.provider === undefined;
    const created = await this.requirements.create(
      {
        autoReview: dto.autoReview,
        autoStart: dto.autoStart,
        baseRef: dto.baseRef,
        budget,
        createdBy: 'rd_agent',
        dependsOn: dto.dependsOn,
        description: dto.description,
        // Passed on to be judged where every Requirement's place is (an agent never gets "in place").
        isolation: dto.isolation,
        model: inherits ? (dto.model ?? parent.model) : dto.model,
        parentRequirementId: parentId,
        provider: dto.provider ?? parent.session.provider,
        reasoningEffort: inherits ? (dto.reasoningEffort ?? parent.reasoningEffort) : dto.reasoningEffort,
        sourceSessionId: dto.sourceSessionId,
        title: dto.title,
      },
      actor,
    );
    this.logger.log({
      ...audit(actor),
      budgetClamped: clamped,
      msg: 'requirement proposed',
      parentRequirementId: parentId,
      requirementId: created.id,
      start: dto.start === true,
    });
    const warnings: RequirementWarning[] = clamped ? ['budget_clamped'] : [];
    if (!dto.start) {
      return { requirement: created, warnings };
    }
    return { requirement: (await this.runs.start(created.id, {}, actor)).requirement, warnings };
  }

  /**
   * The budget an agent's proposal gets (issue 25 §4): at most the room its parent's tree has left
   * under every budget up the chain (what the trees committed plus what their runs reported so
   * far), or the configured default where none limits a kind; asking for more, or for none, is
   * lowered to that with a warning rather than refused. A parent whose tree has nothing left
   * proposes nothing (409 `budget_reached`): the child could never run without a person, who can
   * raise the budget first. The owner's token is a person's, and sets any budget it names.
   */
  private async budgetForChild(
    parentId: string,
    requested: BudgetInputDto | null | undefined,
  ): Promise<{ budget: RequirementBudget | null; clamped: boolean }> {
    const limits = (await this.requirements.lineage(parentId)).map((r) => ({
      budget: budgetOf(r),
      id: r.id,
      spent: plusUsage(treeUsageOf(r), this.runs.runningSpend(r.id)),
      title: r.title,
    }));
    const spent = limits.find((limit) => isReached(limit.budget, limit.spent));
    if (spent) {
      const whose =
        spent.id === parentId
          ? `Requirement ${parentId}`
          : `Requirement ${spent.id} ("${spent.title}"), above ${parentId},`;
      throw conflict(
        'budget_reached',
        `${whose} has spent its budget across its tree; nothing is left for a new Requirement until a person raises it`,
      );
    }
    const defaults = {
      maxCostUsd: this.configuration.get('defaultBudgetMaxCostUsd'),
      maxTokens: this.configuration.get('defaultBudgetMaxTokens'),
    };
    return childBudget(roomUnder(limits), requested, defaults);
  }

  async act(
    targetId: string,
    dto: AgentRequirementActionDto,
    caller: AgentCaller,
    actor: EventActor,
  ): Promise<AgentRequirementActionResponseDto> {
    assertInScope(caller, { requirementId: dto.sourceRequirementId, sessionId: dto.sourceSessionId });
    const target = await this.requirements.get(targetId);
    // Parent and source session are fixed at creation, so this check cannot go stale.
    if (target.parentRequirementId !== dto.sourceRequirementId || target.sourceSessionId !== dto.sourceSessionId) {
      throw conflict(
        'not_proposed_by_source',
        `Requirement ${targetId} was not proposed by session ${dto.sourceSessionId}; agents act only on the children they proposed`,
      );
    }
    const done = (requirement: RequirementResponseDto, runId: string | null): AgentRequirementActionResponseDto => ({
      accepted: true,
      action: dto.action,
      requirement,
      requirementId: targetId,
      runId,
    });
    switch (dto.action) {
      case 'start': {
        const started = await this.runs.start(targetId, {}, actor);
        return done(started.requirement, started.run?.id ?? null);
      }
      case 'stop': {
        const interrupted = await this.runs.interrupt(targetId, 'stop', actor);
        return done(await this.requirements.get(targetId), interrupted.runId);
      }
      case 'delete':
        await this.requirements.cancel(targetId, actor);
        return done(await this.requirements.get(targetId), null);
      case 'done':
        return done(await this.requirements.confirm(targetId, actor), null);
    }
  }

  async related(requirementId: string, sourceSessionId: string, caller: AgentCaller): Promise<RelatedRequirementsDto> {
    assertInScope(caller, { requirementId, sessionId: sourceSessionId });
    const source = await this.sourceOf(requirementId, sourceSessionId);
    const [parent, children] = await Promise.all([
      source.parentRequirementId ? this.requirements.find(source.parentRequirementId) : Promise.resolve(null),
      this.requirements.children(requirementId),
    ]);
    return { children, parent };
  }

  /**
   * Stored in the target's conversation as the sender's agent speaking (`rd_agent` with
   * `sourceRequirementId`), deliverable: it starts the target's session or waits behind its
   * run, and reopens a done target. The relationship is checked inside the delivery's unit.
   */
  async message(
    sourceId: string,
    targetId: string,
    dto: RelatedMessageDto,
    caller: AgentCaller,
    actor: EventActor,
  ): Promise<RelatedMessageResponseDto> {
    assertInScope(caller, { requirementId: sourceId, sessionId: dto.sourceSessionId });
    const source = await this.sourceOf(sourceId, dto.sourceSessionId);
    const result = await this.conversation.deliver(
      targetId,
      async (tx, rows) => {
        const related =
          rows.requirement.id === source.parentRequirementId || rows.requirement.parentRequirementId === sourceId;
        if (!related || targetId === sourceId) {
          throw conflict(
            'not_related',
            `Requirement ${targetId} is not the direct parent or a direct child of ${sourceId}`,
          );
        }
        if (rows.requirement.status === 'cancelled') {
          throw conflict('requirement_cancelled', `Requirement ${targetId} is cancelled`);
        }
        const { message } = await this.messages.append(
          tx,
          rows,
          { author: 'rd_agent', body: dto.message, deliverToRd: true, sourceRequirementId: sourceId },
          actor,
        );
        return { message, wake: true };
      },
      actor,
    );
    if (!result) {
      throw new Error('a related message is always written'); // the unit above never returns null
    }
    this.logger.log({
      ...audit(actor),
      msg: 'related message delivered',
      queued: result.queued,
      requirementId: targetId,
      sourceRequirementId: sourceId,
    });
    return {
      accepted: true,
      message: result.message,
      queued: result.queued,
      requirement: result.requirement,
      sourceRequirementId: sourceId,
      targetRequirementId: targetId,
    };
  }

  /**
   * The source Requirement, which must own the named session. A run's scope already binds the
   * two; for the owner this keeps a typo from speaking as another Requirement's agent.
   */
  private async sourceOf(requirementId: string, sessionId: string): Promise<RequirementResponseDto> {
    const source = await this.requirements.get(requirementId);
    if (source.session.id !== sessionId) {
      throw invalid(
        'session_mismatch',
        `session ${sessionId} is not the session of Requirement ${requirementId} (${source.session.id})`,
      );
    }
    return source;
  }
}
