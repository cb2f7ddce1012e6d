import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork, WhereOf } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage, newestFirst } from '../core/http/pagination';
import { ReviewRequestEntity } from './review-request.entity';

/** The `review_request` table: AI reviews of pull requests. Nothing else names it. */
@Injectable()
export class ReviewsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, review: ReviewRequestEntity): void {
    uow.insert(ReviewRequestEntity, { ...review });
  }

  /** Stages a change of the reviews that match `where`. */
  update(uow: UnitOfWork, set: Partial<ReviewRequestEntity>, where: WhereOf<ReviewRequestEntity>): void {
    uow.update(ReviewRequestEntity, set, where);
  }

  async findByIdIn(uow: UnitOfWork, id: string): Promise<ReviewRequestEntity | null> {
    return (await uow.reads()).findOneBy(ReviewRequestEntity, { id });
  }

  /** The review running for a PR, as the unit sees it (at most one: a partial unique index). */
  async runningForIn(uow: UnitOfWork, pullRequestId: string): Promise<ReviewRequestEntity | null> {
    return (await uow.reads()).findOneBy(ReviewRequestEntity, { pullRequestId, status: 'running' });
  }

  /** Every review still marked running, as the unit sees it (at startup: the ones a stopped manager lost). */
  async allRunningIn(uow: UnitOfWork): Promise<ReviewRequestEntity[]> {
    return (await uow.reads()).findBy(ReviewRequestEntity, { status: 'running' });
  }

  /** Reviews of a PR not yet marked stale whose head is not `headSha`. */
  async notStaleOtherHeadIn(uow: UnitOfWork, pullRequestId: string, headSha: string): Promise<ReviewRequestEntity[]> {
    return (await uow.reads())
      .createQueryBuilder(ReviewRequestEntity, 'r')
      .where('r.pull_request_id = :pullRequestId AND r.stale = FALSE AND r.target_head_sha <> :headSha', {
        headSha,
        pullRequestId,
      })
      .getMany();
  }

  page(query: PageRequest & { pullRequestId?: string }): Promise<Page<ReviewRequestEntity>> {
    const qb = this.database.read(ReviewRequestEntity).createQueryBuilder('r');
    if (query.pullRequestId !== undefined) {
      qb.andWhere('r.pull_request_id = :pullRequestId', { pullRequestId: query.pullRequestId });
    }
    return keysetPage(qb, newestFirst('r'), 'DESC', query);
  }
}
