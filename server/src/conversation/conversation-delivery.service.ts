import { Injectable, Logger } from '@nestjs/common';

import type { EventActor, ManagerEvent } from '@libs/contracts';

import { OnDomainEvent } from '../core/domain-events';
import '../events/board.events';

import { blockerOf } from '../requirements/budget-rules';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, invalid } from '../core/errors/domain-error';
import { audit } from '../events/event-log.service';
import { MessageResponseDto } from '../messages/dto/message-response.dto';
import { ReplyDto, hasReplyContent } from '../messages/dto/reply.dto';
import { MessagesService } from '../messages/messages.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementEntity } from '../requirements/requirement.entity';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import { RequirementActors } from '../runs/requirement-actors.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import { RunPlacement } from '../runs/run-placement';

/**
 * What a delivery wrote. `wake` asks for a run; `resumes` says the delivery may also end a
 * stop's pause (a person's reply), which nothing else does.
 */
export interface Delivered {
  message: MessageResponseDto;
  wake: boolean;
  resumes?: boolean;
}

/** What a delivered message did: `queued` when it waits for the active run (or no run was woken). */
export interface DeliveryResult {
  message: MessageResponseDto;
  requirement: RequirementResponseDto;
  queued: boolean;
}

/**
 * Conversation delivery: the one way a message reaches an RD session from outside a run, and
 * the decision whether it wakes the session. Lives in `runs` because waking opens a run; the
 * messages module only appends (see docs/decisions.md, "Conversation delivery").
 */
@Injectable()
export class ConversationDelivery {
  private readonly logger = new Logger(ConversationDelivery.name);

  constructor(
    private readonly actors: RequirementActors,
    private readonly database: Database,
    private readonly lifecycle: RunLifecycle,
    private readonly messages: MessagesService,
    private readonly placement: RunPlacement,
    private readonly requirements: RequirementsService,
  ) {}

  /** True once a graceful stop began: a delivery can no longer wake a session. */
  get stopping(): boolean {
    return this.lifecycle.stopping;
  }

  /**
   * POST /requirements/:id/reply: the message always lands in the conversation. With a run
   * active it waits for the next run (queued); otherwise a run starts now, reopening a done
   * Requirement in its original session. A reply to a paused session resumes it: a person
   * writing after a stop is a person acting (docs/decisions.md, "Stop is a pause").
   */
  async reply(requirementId: string, dto: ReplyDto, actor: EventActor): Promise<DeliveryResult> {
    if (!hasReplyContent(dto)) {
      throw invalid('empty_message', 'a reply needs message text or at least one attachment');
    }
    const result = await this.deliver(
      requirementId,
      async (tx, rows) => {
        if (rows.requirement.status === 'cancelled') {
          throw conflict('requirement_cancelled', `Requirement ${requirementId} is cancelled`);
        }
        return { message: await this.messages.appendHuman(tx, rows, dto, actor), resumes: true, wake: true };
      },
      actor,
    );
    return result as DeliveryResult;
  }

  /**
   * The one way a message reaches a session from outside a run: a person's reply, another
   * Requirement's agent, a trigger. `write` appends the message (and whatever must commit with
   * it) in the Requirement's actor and write unit, or returns null to write nothing. When it
   * asks to wake the session, a run starts now unless one is active (then the message waits
   * for the next run) or the session is paused by a stop and the delivery does not `resume` it
   * (only a person does: triggers, timers, reviewers and other agents leave it pending); a done
   * Requirement is reopened in its original session.
   */
  deliver(
    requirementId: string,
    write: (tx: UnitOfWork, rows: RequirementRows) => Promise<Delivered | null>,
    actor: EventActor,
  ): Promise<DeliveryResult | null> {
    return this.actors.act(requirementId, async () => {
      const result = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        const written = await write(tx, rows);
        if (!written) {
          return null;
        }
        // A budget pause is lifted only by raising the budget or an explicit start (issue 18 §1):
        // a person's reply to it waits with the rest of the pending input.
        const paused =
          rows.session.pausedAt !== null && (written.resumes !== true || rows.requirement.budgetReachedAt !== null);
        // On a board, a Requirement another runner runs keeps the message for that runner's next run.
        if (
          !written.wake ||
          paused ||
          rows.session.state === 'running' ||
          this.lifecycle.stopping ||
          this.placement.runsElsewhere(rows.requirement.runnerId)
        ) {
          return {
            message: written.message,
            requirement: toRequirementResponse(rows.requirement, rows.session),
            run: null,
          };
        }
        const blocker = await this.budgetBlocker(tx, rows, written);
        if (blocker) {
          // Paused as its own run would have been, with the notice saying whose budget; a done
          // Requirement stays done (its message waits for a person to reopen it).
          const open = rows.requirement.status !== 'done' && rows.requirement.status !== 'cancelled';
          const requirement = open
            ? await this.lifecycle.pauseForBudget(tx, rows, blocker)
            : toRequirementResponse(rows.requirement, rows.session);
          return { message: written.message, requirement, run: null };
        }
        const opened = await this.lifecycle.openRun(tx, rows, actor);
        return { message: written.message, requirement: opened.requirement, run: opened.run };
      });
      if (!result) {
        return null;
      }
      if (result.run) {
        this.lifecycle.launch(result.run);
      }
      this.logger.log({
        ...audit(actor),
        msg: 'message delivered',
        queued: result.run === null,
        requirementId,
        sequence: result.message.sequence,
      });
      return { message: result.message, queued: result.run === null, requirement: result.requirement };
    });
  }

  /**
   * Team mode: a message another runner wrote to a Requirement this runner runs (a person's reply
   * there, a timer the leader fired, a trigger) wakes it here as it would have there. The same
   * delivery rules decide (running, paused, budget); the message is already in the conversation.
   * Idempotent: this runner's own messages come back through the feed too, and find the session
   * running or their input consumed.
   */
  @OnDomainEvent('board.eventPublished')
  async onBoardEvent(event: ManagerEvent): Promise<void> {
    const own = this.placement.ownRunnerId;
    if (
      event.type !== 'message.created' ||
      own === null ||
      event.requirementId === null ||
      !event.payload.message.deliverToRd
    ) {
      return;
    }
    // Most messages are for Requirements other runners run: the event's snapshot says so without
    // a write unit (the unit checks again, the snapshot may be older than a move).
    if (event.payload.requirement.runner?.id !== own) {
      return;
    }
    const message = event.payload.message;
    await this.deliver(
      event.requirementId,
      async (_tx, rows) => {
        const input =
          rows.requirement.runnerId === own &&
          rows.session.lastConsumedMessageSequence < message.sequence &&
          rows.requirement.status !== 'cancelled';
        return Promise.resolve(input ? { message, resumes: message.author === 'human', wake: true } : null);
      },
      event.actor,
    ).catch((err: unknown) =>
      this.logger.warn({
        error: (err as Error).message,
        msg: "could not deliver another runner's message",
        requirementId: event.requirementId,
      }),
    );
  }

  /**
   * The Requirement whose spent budget keeps this wake from running: its own tree's, or an
   * ancestor's (issue 25 §4) — whatever the wake, since an agent's message to a child it marked
   * done, or a timer, must not run it past a budget. The one exception is a person's reply to a
   * done Requirement: that reopening is a person's start, as for its own budget (issue 18 §1).
   */
  private async budgetBlocker(
    tx: UnitOfWork,
    rows: RequirementRows,
    written: Delivered,
  ): Promise<RequirementEntity | null> {
    if (written.resumes === true && rows.requirement.status === 'done') {
      return null;
    }
    return blockerOf([
      rows.requirement,
      ...(await this.requirements.ancestorsForWrite(tx, rows.requirement)).map((a) => a.requirement),
    ]);
  }
}
