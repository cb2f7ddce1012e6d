import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage } from '../core/http/pagination';
import { SearchRepository } from '../search/search.repository';
import { RequirementMessageEntity } from './requirement-message.entity';

/** The `requirement_message` table: the conversations. Nothing else names it. */
@Injectable()
export class MessagesRepository {
  constructor(
    private readonly database: Database,
    private readonly search: SearchRepository,
  ) {}

  insert(uow: UnitOfWork, message: RequirementMessageEntity): void {
    uow.insert(RequirementMessageEntity, { ...message });
    this.search.indexMessage(uow, message);
  }

  /** Deliverable messages of a Requirement after `sequence`, as the unit sees them. */
  async countDeliverableAfter(uow: UnitOfWork, requirementId: string, sequence: number): Promise<number> {
    return (await uow.reads())
      .createQueryBuilder(RequirementMessageEntity, 'm')
      .where('m.requirement_id = :requirementId AND m.deliver_to_rd = TRUE AND m.sequence > :sequence', {
        requirementId,
        sequence,
      })
      .getCount();
  }

  /** A conversation in ascending sequence after `afterSequence`, a page at a time. */
  page(requirementId: string, afterSequence: number, query: PageRequest): Promise<Page<RequirementMessageEntity>> {
    const qb = this.database
      .read(RequirementMessageEntity)
      .createQueryBuilder('m')
      .where('m.requirement_id = :requirementId AND m.sequence > :afterSequence', { afterSequence, requirementId });
    return keysetPage(qb, [{ column: 'm.sequence', type: 'number', value: (m) => m.sequence }], 'ASC', query);
  }

  /** The deliverable messages of a run's input boundary [from, to], in order. */
  deliverableBetween(
    requirementId: string,
    fromSequence: number,
    toSequence: number,
  ): Promise<RequirementMessageEntity[]> {
    return this.database.readManager
      .createQueryBuilder(RequirementMessageEntity, 'm')
      .where(
        'm.requirement_id = :requirementId AND m.deliver_to_rd = TRUE AND m.sequence BETWEEN :fromSequence AND :toSequence',
        { fromSequence, requirementId, toSequence },
      )
      .orderBy('m.sequence', 'ASC')
      .getMany();
  }

  /** The latest `limit` messages of a conversation before `beforeSequence`, in ascending order (what a new session is told happened). */
  async latestBefore(
    requirementId: string,
    beforeSequence: number,
    limit: number,
  ): Promise<RequirementMessageEntity[]> {
    const rows = await this.database.readManager
      .createQueryBuilder(RequirementMessageEntity, 'm')
      .where('m.requirement_id = :requirementId AND m.sequence < :beforeSequence', { beforeSequence, requirementId })
      .orderBy('m.sequence', 'DESC')
      .limit(limit)
      .getMany();
    return rows.reverse();
  }

  /** The latest message of one author in a conversation, or null (what a squashed commit's summary quotes). */
  latestOf(
    requirementId: string,
    author: RequirementMessageEntity['author'],
  ): Promise<RequirementMessageEntity | null> {
    return this.database
      .read(RequirementMessageEntity)
      .createQueryBuilder('m')
      .where('m.requirement_id = :requirementId AND m.author = :author', { author, requirementId })
      .orderBy('m.sequence', 'DESC')
      .limit(1)
      .getOne();
  }

  /** The latest message with one of the system codes after `afterSequence`, or null (an index range of one conversation). */
  latestWithCode(
    requirementId: string,
    codes: ReadonlyArray<NonNullable<RequirementMessageEntity['code']>>,
    afterSequence: number,
  ): Promise<RequirementMessageEntity | null> {
    return this.database
      .read(RequirementMessageEntity)
      .createQueryBuilder('m')
      .where('m.requirement_id = :requirementId AND m.sequence > :afterSequence AND m.code IN (:...codes)', {
        afterSequence,
        codes,
        requirementId,
      })
      .orderBy('m.sequence', 'DESC')
      .limit(1)
      .getOne();
  }
}
