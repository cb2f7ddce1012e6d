import { Injectable, Logger } from '@nestjs/common';

import { EventActor, LIMITS, ReviewCommentState } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, invalid, notFound } from '../core/errors/domain-error';
import { isId, newId } from '../core/ids';
import { ConversationDelivery, DeliveryResult } from '../conversation/conversation-delivery.service';
import { EventLog, audit } from '../events/event-log.service';
import { MessageResponseDto } from '../messages/dto/message-response.dto';
import { MessagesService } from '../messages/messages.service';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import {
  CreateReviewCommentDto,
  ReplyToReviewCommentDto,
  ReviewCommentDto,
  SendReviewDto,
  UpdateReviewCommentDto,
  toReviewComment,
} from './dto/review-comment.dto';
import { publishComments } from './published-comments';
import { ReviewAnchors } from './review-anchors.service';
import { ReviewCommentEntity } from './review-comment.entities';
import { ReviewCommentsRepository } from './review-comments.repository';
import { reviewMessage } from './review-message';

/** What a sent review did: its message, whether it waits for a run, and the comments it sent. */
export interface SentReview {
  message: MessageResponseDto;
  queued: boolean;
  requirement: RequirementResponseDto;
  reviewComments: ReviewCommentDto[];
}

const commentNotFound = (id: string) => notFound('review_comment_not_found', `Review comment ${id} not found`);

function checkBytes(text: string, what: string): void {
  if (Buffer.byteLength(text, 'utf8') > LIMITS.reviewCommentBytes) {
    throw invalid('comment_too_long', `${what} is over ${LIMITS.reviewCommentBytes} bytes`);
  }
}

function authorOf(actor: EventActor): Pick<ReviewCommentEntity, 'authorId' | 'authorKind' | 'authorName'> {
  return actor.kind === 'agent'
    ? { authorId: actor.id, authorKind: 'agent', authorName: null }
    : { authorId: actor.id, authorKind: 'person', authorName: actor.name ?? null };
}

/**
 * A person's review of a Requirement's changes (issue 46): comments on lines of its diff, kept as
 * drafts and sent as one message that is delivered exactly as a reply; each comment a thread the
 * agent answers (and may resolve) through its run's API, and that follows the code from import to
 * import (moved with its lines, or outdated when they change).
 */
@Injectable()
export class ReviewCommentsService {
  private readonly logger = new Logger(ReviewCommentsService.name);

  constructor(
    private readonly anchors: ReviewAnchors,
    private readonly clock: Clock,
    private readonly conversation: ConversationDelivery,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly messages: MessagesService,
    private readonly repository: ReviewCommentsRepository,
    private readonly requirements: RequirementsService,
  ) {}

  /** GET /requirements/:id/review-comments (404 for an unknown Requirement). */
  async list(requirementId: string, state?: ReviewCommentState, outdated?: boolean): Promise<ReviewCommentDto[]> {
    await this.requirements.get(requirementId);
    const rows = await this.repository.list(requirementId, state, outdated);
    const replies = await this.repository.replies(rows.map((r) => r.id));
    return rows.map((row) => toReviewComment(row, replies));
  }

  /** What the Requirement's agent sees: the threads sent to it (a person's drafts are theirs alone). */
  async listSent(requirementId: string): Promise<ReviewCommentDto[]> {
    return (await this.list(requirementId)).filter((c) => c.messageId !== null);
  }

  /**
   * POST /requirements/:id/review-comments: a draft on lines the Requirement's diff shows on
   * that side, quoting them (400 not_in_diff otherwise).
   */
  async create(requirementId: string, dto: CreateReviewCommentDto, actor: EventActor): Promise<ReviewCommentDto> {
    checkBytes(dto.body, 'the comment');
    const side = dto.side ?? 'new';
    const endLine = dto.endLine ?? dto.line;
    if (endLine < dto.line) {
      throw invalid('invalid_range', `endLine (${endLine}) is before line (${dto.line})`);
    }
    if (endLine - dto.line + 1 > LIMITS.reviewCommentLines) {
      throw invalid('range_too_long', `a comment spans at most ${LIMITS.reviewCommentLines} lines`);
    }
    const anchor = await this.anchors.anchorOf(requirementId, dto.path, side, dto.line, endLine);
    const created = await this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      this.refuseIfCancelled(rows);
      if ((await this.repository.countIn(tx, requirementId)) >= LIMITS.reviewCommentsPerRequirement) {
        throw conflict(
          'too_many_comments',
          `Requirement ${requirementId} holds ${LIMITS.reviewCommentsPerRequirement} review comments; delete drafts or resolve threads first`,
        );
      }
      const now = this.clock.nowIso();
      const row: ReviewCommentEntity = {
        ...authorOf(actor),
        anchorCommit: anchor.commit,
        body: dto.body,
        createdAt: now,
        endLine,
        excerpt: anchor.excerpt,
        id: newId('reviewComment'),
        line: dto.line,
        messageId: null,
        outdated: false,
        path: anchor.path,
        requirementId,
        sentAt: null,
        side,
        state: 'draft',
        updatedAt: now,
      };
      this.repository.insert(tx, row);
      const [comment] = await publishComments(this.events, this.repository, tx, rows, [row], actor);
      return comment;
    });
    this.logger.log({ ...audit(actor), commentId: created.id, msg: 'review comment drafted', requirementId });
    // An import that landed between reading the anchor and this write is followed now, not at the next one.
    void this.anchors.follow(requirementId).catch(() => undefined);
    return created;
  }

  /** PATCH: a draft's text, or a sent thread resolved or reopened. */
  async update(
    requirementId: string,
    commentId: string,
    dto: UpdateReviewCommentDto,
    actor: EventActor,
  ): Promise<ReviewCommentDto> {
    if ((dto.body === undefined) === (dto.state === undefined)) {
      throw invalid('one_change', 'give either body (a draft\'s text) or state ("resolved" or "open")');
    }
    return this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      const row = await this.findIn(tx, requirementId, commentId);
      const now = this.clock.nowIso();
      let set: Partial<ReviewCommentEntity>;
      if (dto.body !== undefined) {
        checkBytes(dto.body, 'the comment');
        if (row.state !== 'draft') {
          throw conflict(
            'comment_not_draft',
            `Review comment ${commentId} is ${row.state}; only a draft's text changes`,
          );
        }
        set = { body: dto.body };
      } else if (row.messageId === null) {
        throw conflict(
          'comment_not_sent',
          `Review comment ${commentId} was never sent; a draft is deleted, not resolved`,
        );
      } else {
        const state = this.nextState(row.state, dto.state as 'resolved' | 'open');
        if (state === row.state) {
          return toReviewComment(row, await this.repository.replies([row.id], tx));
        }
        set = { state };
      }
      Object.assign(row, set, { updatedAt: now });
      this.repository.update(tx, row.id, { ...set, updatedAt: now });
      const [comment] = await publishComments(this.events, this.repository, tx, rows, [row], actor);
      return comment;
    });
  }

  /** DELETE: a comment never sent (a draft, outdated or not). */
  async remove(requirementId: string, commentId: string, actor: EventActor): Promise<void> {
    await this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      const row = await this.findIn(tx, requirementId, commentId);
      if (row.messageId !== null) {
        throw conflict('comment_not_draft', `Review comment ${commentId} was sent; resolve it instead`);
      }
      this.repository.delete(tx, row.id);
      await this.events.append(tx, {
        actor,
        payload: { reviewCommentId: row.id },
        requirementId,
        sessionId: rows.session.id,
        type: 'review_comment.deleted',
      });
    });
  }

  /**
   * POST /requirements/:id/reviews: the drafts (every one, or those named) and the overall body as
   * one person's message, delivered as a reply is (queued behind a run, waking a resting session);
   * the comments become `sent` with it, in the same unit.
   */
  async send(requirementId: string, dto: SendReviewDto, actor: EventActor): Promise<SentReview> {
    let sent: ReviewCommentDto[] = [];
    // The write below always writes (or throws): a delivery that wrote nothing does not happen here.
    const delivered = (await this.conversation.deliver(
      requirementId,
      async (tx, rows) => {
        this.refuseIfCancelled(rows);
        const drafts = await this.draftsToSend(tx, requirementId, dto.commentIds);
        const body = reviewMessage(drafts, dto.body ?? null);
        if (body.length > LIMITS.messageLength) {
          throw invalid(
            'review_too_large',
            `the review is ${body.length} characters, over a message's ${LIMITS.messageLength}: send fewer comments at once (commentIds)`,
          );
        }
        const message = await this.messages.appendHuman(tx, rows, { message: body }, actor);
        const set = { messageId: message.id, sentAt: this.clock.nowIso(), state: 'sent' as const };
        const now = set.sentAt;
        drafts.forEach((row) => Object.assign(row, set, { updatedAt: now }));
        this.repository.updateMany(
          tx,
          drafts.map((row) => row.id),
          { ...set, updatedAt: now },
        );
        sent = await publishComments(this.events, this.repository, tx, rows, drafts, actor);
        return { message, resumes: true, wake: true };
      },
      actor,
    )) as DeliveryResult;
    this.logger.log({ ...audit(actor), comments: sent.length, msg: 'review sent', requirementId });
    return { ...delivered, reviewComments: sent };
  }

  /** The agent's answer in a thread sent to it (a draft is not found: it is the person's alone). */
  async reply(
    requirementId: string,
    commentId: string,
    dto: ReplyToReviewCommentDto,
    actor: EventActor,
  ): Promise<ReviewCommentDto> {
    if (Buffer.byteLength(dto.body, 'utf8') > LIMITS.reviewReplyBytes) {
      throw invalid('reply_too_long', `the reply is over ${LIMITS.reviewReplyBytes} bytes`);
    }
    return this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      const row = await this.findIn(tx, requirementId, commentId);
      if (row.messageId === null) {
        throw commentNotFound(commentId);
      }
      if ((await this.repository.countRepliesIn(tx, row.id)) >= LIMITS.reviewRepliesPerComment) {
        throw conflict('too_many_replies', `Review comment ${commentId} has ${LIMITS.reviewRepliesPerComment} replies`);
      }
      const now = this.clock.nowIso();
      this.repository.insertReply(tx, {
        ...authorOf(actor),
        body: dto.body,
        commentId: row.id,
        createdAt: now,
        id: newId('reviewReply'),
        requirementId,
      });
      const state = dto.resolve === true ? 'resolved' : row.state;
      Object.assign(row, { state, updatedAt: now });
      this.repository.update(tx, row.id, { state, updatedAt: now });
      const [comment] = await publishComments(this.events, this.repository, tx, rows, [row], actor);
      return comment;
    });
  }

  private nextState(state: ReviewCommentState, wanted: 'resolved' | 'open'): ReviewCommentState {
    if (wanted === 'resolved') {
      return 'resolved';
    }
    // Reopened: a sent thread again (a sent one is already open).
    return state === 'resolved' ? 'sent' : state;
  }

  private refuseIfCancelled(rows: RequirementRows): void {
    if (rows.requirement.status === 'cancelled') {
      throw conflict('requirement_cancelled', `Requirement ${rows.requirement.id} is cancelled`);
    }
  }

  private async findIn(tx: UnitOfWork, requirementId: string, commentId: string): Promise<ReviewCommentEntity> {
    const row = isId('reviewComment', commentId) ? await this.repository.findIn(tx, requirementId, commentId) : null;
    if (!row) {
      throw commentNotFound(commentId);
    }
    return row;
  }

  /** The drafts a review sends: those named (each a draft of this Requirement), else every draft. */
  private async draftsToSend(
    tx: UnitOfWork,
    requirementId: string,
    ids: string[] | undefined,
  ): Promise<ReviewCommentEntity[]> {
    if (ids === undefined) {
      const drafts = await this.repository.ofRequirementIn(tx, requirementId, ['draft']);
      if (drafts.length === 0) {
        throw conflict('no_draft_comments', `Requirement ${requirementId} has no draft comments to send`);
      }
      return drafts;
    }
    if (ids.length === 0) {
      throw conflict('no_draft_comments', 'commentIds names no comment to send');
    }
    // One read of the Requirement's comments (at most LIMITS.reviewCommentsPerRequirement), in their order.
    const named = new Set(ids);
    const rows = (await this.repository.ofRequirementIn(tx, requirementId)).filter((row) => named.has(row.id));
    const missing = [...named].find((id) => !rows.some((row) => row.id === id));
    if (missing !== undefined) {
      throw commentNotFound(missing);
    }
    const sent = rows.find((row) => row.state !== 'draft');
    if (sent) {
      throw conflict('comment_not_draft', `Review comment ${sent.id} is ${sent.state}, not a draft`);
    }
    return rows;
  }
}
