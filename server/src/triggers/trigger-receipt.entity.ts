import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One delivered (or baseline-seen) occurrence of an external event: what makes a delivery
 * happen at most once (invariant 10). `messageId` is null for a baseline.
 */
@Entity('agent_trigger_receipt')
@Index('idx_trigger_receipt_requirement', ['requirementId'])
export class TriggerReceiptEntity {
  @PrimaryColumn('varchar') triggerId!: string;
  @PrimaryColumn('varchar') receiptKey!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar', { nullable: true }) messageId!: string | null;
  @Column('varchar') createdAt!: string;
}
