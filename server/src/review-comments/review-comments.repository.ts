import { Injectable } from '@nestjs/common';

import type { ReviewCommentState } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { ReviewCommentEntity, ReviewReplyEntity, ReviewViewedFileEntity } from './review-comment.entities';

/** The `review_comment` and `review_comment_reply` tables. Nothing else names them. */
@Injectable()
export class ReviewCommentsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, comment: ReviewCommentEntity): void {
    uow.insert(ReviewCommentEntity, { ...comment });
  }

  insertReply(uow: UnitOfWork, reply: ReviewReplyEntity): void {
    uow.insert(ReviewReplyEntity, { ...reply });
  }

  update(uow: UnitOfWork, id: string, set: Partial<ReviewCommentEntity>): void {
    uow.update(ReviewCommentEntity, set, { id });
  }

  /** One change to several comments (a review's drafts, sent together). */
  updateMany(uow: UnitOfWork, ids: string[], set: Partial<ReviewCommentEntity>): void {
    uow.update(ReviewCommentEntity, set, { id: ids });
  }

  delete(uow: UnitOfWork, id: string): void {
    uow.delete(ReviewCommentEntity, { id });
  }

  /** One comment of one Requirement, as the unit sees it. */
  async findIn(uow: UnitOfWork, requirementId: string, id: string): Promise<ReviewCommentEntity | null> {
    return (await uow.reads()).findOneBy(ReviewCommentEntity, { id, requirementId });
  }

  /** A Requirement's comments as the unit sees them (in `states` when given), oldest first. */
  async ofRequirementIn(
    uow: UnitOfWork,
    requirementId: string,
    states?: readonly ReviewCommentState[],
  ): Promise<ReviewCommentEntity[]> {
    const qb = (await uow.reads())
      .createQueryBuilder(ReviewCommentEntity, 'c')
      .where('c.requirement_id = :requirementId', { requirementId });
    if (states) {
      qb.andWhere('c.state IN (:...states)', { states });
    }
    return qb.orderBy('c.created_at').addOrderBy('c.id').getMany();
  }

  /** How many comments a Requirement holds, as the unit sees it. */
  async countIn(uow: UnitOfWork, requirementId: string): Promise<number> {
    return (await uow.reads()).countBy(ReviewCommentEntity, { requirementId });
  }

  async countRepliesIn(uow: UnitOfWork, commentId: string): Promise<number> {
    return (await uow.reads()).countBy(ReviewReplyEntity, { commentId });
  }

  /** Marks a file viewed at a content (replacing an earlier mark), or unmarks it (`blob` null). */
  setViewed(uow: UnitOfWork, row: ReviewViewedFileEntity, viewed: boolean): void {
    const key = { path: row.path, personId: row.personId, requirementId: row.requirementId };
    uow.delete(ReviewViewedFileEntity, key);
    if (viewed) {
      uow.insert(ReviewViewedFileEntity, { ...row });
    }
  }

  /** The files one person marked viewed on a Requirement. */
  viewed(requirementId: string, personId: string): Promise<ReviewViewedFileEntity[]> {
    return this.database.read(ReviewViewedFileEntity).findBy({ personId, requirementId });
  }

  /** A Requirement's comments (in `state`, outdated or not, when given), oldest first, outside any unit. */
  list(requirementId: string, state?: ReviewCommentState, outdated?: boolean): Promise<ReviewCommentEntity[]> {
    const qb = this.database
      .read(ReviewCommentEntity)
      .createQueryBuilder('c')
      .where('c.requirement_id = :requirementId', { requirementId });
    if (state) {
      qb.andWhere('c.state = :state', { state });
    }
    if (outdated !== undefined) {
      qb.andWhere('c.outdated = :outdated', { outdated });
    }
    return qb.orderBy('c.created_at').addOrderBy('c.id').getMany();
  }

  /** The comments of a Requirement that follow the code (not outdated), outside any unit. */
  anchored(requirementId: string): Promise<ReviewCommentEntity[]> {
    return this.database
      .read(ReviewCommentEntity)
      .createQueryBuilder('c')
      .where('c.requirement_id = :requirementId AND c.outdated = :outdated', { outdated: false, requirementId })
      .orderBy('c.created_at')
      .getMany();
  }

  /** The replies to these comments, oldest first (read in the unit when given). */
  async replies(commentIds: string[], uow?: UnitOfWork): Promise<ReviewReplyEntity[]> {
    if (commentIds.length === 0) {
      return [];
    }
    const qb = uow
      ? (await uow.reads()).createQueryBuilder(ReviewReplyEntity, 'r')
      : this.database.read(ReviewReplyEntity).createQueryBuilder('r');
    return qb
      .where('r.comment_id IN (:...commentIds)', { commentIds })
      .orderBy('r.created_at')
      .addOrderBy('r.id')
      .getMany();
  }
}
