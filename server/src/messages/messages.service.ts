import { Injectable } from '@nestjs/common';

import type { EventActor, MessageAuthor, SystemMessageArgs, SystemMessageCode } from '@libs/contracts';

import { AttachmentsService } from '../attachments/attachments.service';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { newId } from '../core/ids';
import { EventLog } from '../events/event-log.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsRepository } from '../requirements/requirements.repository';
import { requirementNotFound } from '../requirements/requirements.service';
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
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: MessagesRepository,
    private readonly requirements: RequirementsRepository,
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
    const sequence = session.lastMessageSequence + 1;
    const entity: RequirementMessageEntity = {
      args: input.code ? (input.args ?? {}) : null,
      author: input.author,
      body: input.body,
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
    this.requirements.changeSession(tx, session, {
      lastMessageSequence: sequence,
      pendingMessageCount: session.pendingMessageCount + (entity.deliverToRd ? 1 : 0),
      updatedAt: now,
    });
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
  async appendHuman(tx: UnitOfWork, rows: RequirementRows, dto: ReplyDto, actor: EventActor): Promise<MessageResponseDto> {
    const appended = await this.append(tx, rows, { attachmentIds: dto.attachmentIds ?? [], author: 'human', body: dto.message ?? '', deliverToRd: true }, actor);
    return appended.message;
  }

  /** Deliverable messages after `sequence`: the session's pending count once a run consumed up to it. */
  countDeliverableAfter(tx: UnitOfWork, requirementId: string, sequence: number): Promise<number> {
    return this.repository.countDeliverableAfter(tx, requirementId, sequence);
  }

  /** The conversation in ascending sequence, a page at a time. */
  async list(requirementId: string, query: ListMessagesQueryDto): Promise<MessagePageDto> {
    if (!(await this.requirements.exists(requirementId))) {
      throw requirementNotFound(requirementId);
    }
    const { nextCursor, rows } = await this.repository.page(requirementId, query.afterSequence ?? 0, query);
    const attachments = await this.attachments.forMessages(
      this.database.readManager,
      rows.map((m) => m.id),
    );
    return { items: rows.map((m) => toMessageResponse(m, attachments.get(m.id) ?? [])), nextCursor };
  }
}
