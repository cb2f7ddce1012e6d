import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { AttentionItemEntity } from '../requirements/attention-item.entity';

/** The only place that writes `attention_item` (the requirements feature reads it for snapshots). */
@Injectable()
export class AttentionRepository {
  constructor(private readonly database: Database) {}

  /** Every open item (one person's with `personId`): as many as live Requirements have reasons, never history. */
  open(personId?: string): Promise<AttentionItemEntity[]> {
    return this.database.read(AttentionItemEntity).find({ where: personId === undefined ? {} : { personId } });
  }

  /** The items of `ids` that are open. */
  openOf(ids: string[]): Promise<AttentionItemEntity[]> {
    return ids.length === 0
      ? Promise.resolve([])
      : this.database.read(AttentionItemEntity).createQueryBuilder('a').where('a.id IN (:...ids)', { ids }).getMany();
  }

  /** The Requirements that have an open item. */
  async requirementsWithItems(): Promise<string[]> {
    const rows = await this.database.read(AttentionItemEntity).find({ select: { requirementId: true } });
    return [...new Set(rows.map((row) => row.requirementId))];
  }

  insert(uow: UnitOfWork, item: AttentionItemEntity): void {
    uow.insert(AttentionItemEntity, item);
  }

  remove(uow: UnitOfWork, ids: string[]): void {
    uow.delete(AttentionItemEntity, { id: ids });
  }

  reword(uow: UnitOfWork, id: string, summary: string): void {
    uow.update(AttentionItemEntity, { summary }, { id });
  }
}
