import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { TriggerReceiptEntity } from './trigger-receipt.entity';

/** The `agent_trigger_receipt` table: occurrences already delivered. Nothing else names it. */
@Injectable()
export class TriggerReceiptsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, receipt: TriggerReceiptEntity): void {
    uow.insert(TriggerReceiptEntity, { ...receipt });
  }

  /** Stages a receipt; one that exists already is kept as it is (ON CONFLICT DO NOTHING). */
  insertIfAbsent(uow: UnitOfWork, receipt: TriggerReceiptEntity): void {
    uow.insert(TriggerReceiptEntity, { ...receipt }, { onConflict: 'ignore' });
  }

  /** Whether the occurrence has a receipt, as the unit sees it (including earlier units of its batch). */
  async existsIn(uow: UnitOfWork, triggerId: string, receiptKey: string): Promise<boolean> {
    return (await uow.reads()).exists(TriggerReceiptEntity, { where: { receiptKey, triggerId } });
  }

  /** A Requirement's receipt keys that start with `prefix` (committed). */
  async keysWithPrefix(requirementId: string, prefix: string): Promise<Set<string>> {
    const rows = await this.database
      .read(TriggerReceiptEntity)
      .createQueryBuilder('t')
      .select('t.receipt_key', 'key')
      .where('t.requirement_id = :requirementId AND t.receipt_key >= :from AND t.receipt_key < :to', {
        from: prefix,
        requirementId,
        to: `${prefix}\uffff`,
      })
      .getRawMany<{ key: string }>();
    return new Set(rows.map((row) => row.key));
  }
}
