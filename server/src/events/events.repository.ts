import { Injectable } from '@nestjs/common';

import type { ManagerEventType } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage } from '../core/http/pagination';
import { ManagerEventEntity } from './manager-event.entity';

/**
 * The `manager_event` table: the event log, and so the traces (the seed makes
 * `run.trace.appended` events the canonical trace storage). Events are appended only through
 * the unit of work (`UnitOfWork.appendEvent`), which gives them gap-free ids in commit order;
 * this repository reads them and removes a purged Requirement's.
 */
@Injectable()
export class EventsRepository {
  constructor(private readonly database: Database) {}

  /** Committed events after `cursor`, ascending, at most `limit`. */
  after(cursor: number, limit: number): Promise<ManagerEventEntity[]> {
    return this.database
      .read(ManagerEventEntity)
      .createQueryBuilder('e')
      .where('e.id > :cursor', { cursor })
      .orderBy('e.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Committed events of `types` after `cursor`, ascending, at most `limit` (what a reaction catches up on). */
  ofTypesAfter(cursor: number, types: readonly ManagerEventType[], limit: number): Promise<ManagerEventEntity[]> {
    return this.database
      .read(ManagerEventEntity)
      .createQueryBuilder('e')
      .where('e.id > :cursor AND e.type IN (:...types)', { cursor, types })
      .orderBy('e.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** How many events of `types` came after `cursor` (counted up to `cap`), and when the oldest of them was written. */
  async backlog(
    cursor: number,
    types: readonly ManagerEventType[],
    cap: number,
  ): Promise<{ count: number; oldestAt: string | null }> {
    const rows = await this.database
      .read(ManagerEventEntity)
      .createQueryBuilder('e')
      .select(['e.id', 'e.createdAt'])
      .where('e.id > :cursor AND e.type IN (:...types)', { cursor, types })
      .orderBy('e.id', 'ASC')
      .limit(cap)
      .getMany();
    return { count: rows.length, oldestAt: rows[0]?.createdAt ?? null };
  }

  /** The newest committed event's id (0 when none). */
  async lastId(): Promise<number> {
    const row = await this.database
      .read(ManagerEventEntity)
      .createQueryBuilder('e')
      .select('MAX(e.id)', 'id')
      .getRawOne<{ id: number | string | null }>();
    return Number(row?.id ?? 0);
  }

  /** Events of one type for a run or a Requirement, ascending by id (which orders them across runs too). */
  pageOf(
    type: ManagerEventType,
    scope: { runId: string } | { requirementId: string },
    query: PageRequest,
  ): Promise<Page<ManagerEventEntity>> {
    const qb = this.database.read(ManagerEventEntity).createQueryBuilder('e').where('e.type = :type', { type });
    if ('runId' in scope) {
      qb.andWhere('e.run_id = :runId', { runId: scope.runId });
    } else {
      qb.andWhere('e.requirement_id = :requirementId', { requirementId: scope.requirementId });
    }
    return keysetPage(qb, [{ column: 'e.id', type: 'number', value: (row) => row.id }], 'ASC', query);
  }

  /** Stages the removal of the events of purged Requirements. */
  deleteForRequirements(uow: UnitOfWork, requirementIds: string[]): void {
    uow.delete(ManagerEventEntity, { requirementId: requirementIds });
  }
}
