import { Injectable } from '@nestjs/common';

import type { EventActor, MessageAuthor, SystemMessageArgs, SystemMessageCode } from '@libs/contracts';

import { AttachmentsService } from '../attachments/attachments.service';
import { Clock } from '../core/clock';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { newId } from '../core/ids';
import { SecretsService } from '../core/secrets/secrets.service';
import { EventLog } from '../events/event-log.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService, requirementNotFound } from '../requirements/requirements.service';
import { ListMessagesQueryDto } from './dto/list-messages-query.dto';
import { MessagePageDto, MessageResponseDto, toMessageResponse } from './dto/message-response.dto';
import { ReplyDto } from './dto/reply.dto';
import { MessagesRepository } from './messages.repository';
import { RequirementMessageEntity } from './requirement-message.entity';

export interface NewMessage {
  author: MessageAuthor;
  body: string;
  deliverToRd: boolean;
  attachmentIds?: string[];
  runId?: string | null;
  sourceRequirementId?: string | null;
  source?: string | null;
  triggerId?: string | null;
  metadata?: Record<string, unknown> | null;
  /** On Agent Manager's own messages: what `body` says, as a code and its arguments (issue 26 §13). */
  code?: SystemMessageCode | null;
  args?: SystemMessageArgs | null;
}

/**
 * The conversation: the one place messages are appended (humans, agents, triggers all come
 * through `append`), so sequences stay gap-free and every message has its event.
 */
@Injectable()
export class MessagesService {
  constructor(
    private readonly attachments: AttachmentsService,
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly repository: MessagesRepository,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    private readonly secrets: SecretsService,
  ) {}

  /**
   * Appends a message inside the caller's write unit, given the rows from `loadForWrite`.
   * Sequence numbers come from a counter on the session row; the write path is serialized, so
   * they are gap-free in commit order.
   */
  async append(
    tx: UnitOfWork,
    { requirement, session }: RequirementRows,
    input: NewMessage,
    actor: EventActor,
  ): Promise<{ message: MessageResponseDto; requirement: RequirementResponseDto }> {
    const now = this.clock.nowIso();
    // The session's counter gives the sequence: gap-free in commit order (the write path is serialized).
    const sequence = this.requirementLifecycle.recordMessage(tx, session, input.deliverToRd, now);
    // A person's message names the person who wrote it (the request's actor), for everyone on the board.
    const person = input.author === 'human' && actor.kind === 'human' && actor.name ? actor : null;
    const entity: RequirementMessageEntity = {
      args: input.code ? (input.args ?? {}) : null,
      author: input.author,
      authorId: person?.id ?? null,
      authorName: person?.name ?? null,
      // A configured secret's value (echoed by an agent, pasted by a person) is never stored.
      body: this.secrets.mask(input.body),
      code: input.code ?? null,
      createdAt: now,
      deliverToRd: input.deliverToRd,
      id: newId('message'),
      metadata: input.metadata ?? null,
      requirementId: requirement.id,
      runId: input.runId ?? null,
      sequence,
      sessionId: session.id,
      source: input.source ?? null,
      sourceRequirementId: input.sourceRequirementId ?? null,
      triggerId: input.triggerId ?? null,
    };
    this.repository.insert(tx, entity);
    const attachments = await this.attachments.claim(tx, requirement.id, input.attachmentIds ?? [], entity.id);
    const message = toMessageResponse(entity, attachments);
    // Built from the rows this unit holds (the write path is serialized): no re-read needed.
    const snapshot = toRequirementResponse(requirement, session);
    await this.events.append(tx, {
      actor,
      payload: { message, requirement: snapshot },
      requirementId: requirement.id,
      runId: entity.runId,
      sessionId: session.id,
      type: 'message.created',
    });
    return { message, requirement: snapshot };
  }

  /** A person's message (a reply, or the text of a start): always delivered to the RD session. */
  async appendHuman(
    tx: UnitOfWork,
    rows: RequirementRows,
    dto: ReplyDto,
    actor: EventActor,
  ): Promise<MessageResponseDto> {
    const appended = await this.append(
      tx,
      rows,
      { attachmentIds: dto.attachmentIds ?? [], author: 'human', body: dto.message ?? '', deliverToRd: true },
      actor,
    );
    return appended.message;
  }

  /** Deliverable messages after `sequence`: the session's pending count once a run consumed up to it. */
  countDeliverableAfter(tx: UnitOfWork, requirementId: string, sequence: number): Promise<number> {
    return this.repository.countDeliverableAfter(tx, requirementId, sequence);
  }

  /** The deliverable messages of a run's input boundary [from, to], committed, in order (what its prompt shows). */
  deliverableBetween(
    requirementId: string,
    fromSequence: number,
    toSequence: number,
  ): Promise<RequirementMessageEntity[]> {
    return this.repository.deliverableBetween(requirementId, fromSequence, toSequence);
  }

  /** The latest `limit` messages before `beforeSequence`, ascending (a new session's "conversation so far"). */
  latestBefore(requirementId: string, beforeSequence: number, limit: number): Promise<RequirementMessageEntity[]> {
    return this.repository.latestBefore(requirementId, beforeSequence, limit);
  }

  /** The latest message of one author in a conversation, or null. */
  latestOf(requirementId: string, author: MessageResponseDto['author']): Promise<RequirementMessageEntity | null> {
    return this.repository.latestOf(requirementId, author);
  }

  /** The latest message with one of the system codes among the last `window` messages, or null. */
  latestWithCode(
    requirementId: string,
    codes: ReadonlyArray<NonNullable<RequirementMessageEntity['code']>>,
    lastSequence: number,
    window: number,
  ): Promise<RequirementMessageEntity | null> {
    return this.repository.latestWithCode(requirementId, codes, lastSequence - window);
  }

  /** The conversation in ascending sequence, a page at a time. */
  async list(requirementId: string, query: ListMessagesQueryDto): Promise<MessagePageDto> {
    if (!(await this.requirements.exists(requirementId))) {
      throw requirementNotFound(requirementId);
    }
    const { nextCursor, rows } = await this.repository.page(requirementId, query.afterSequence ?? 0, query);
    const attachments = await this.attachments.forMessages(rows.map((m) => m.id));
    return { items: rows.map((m) => toMessageResponse(m, attachments.get(m.id) ?? [])), nextCursor };
  }
}
