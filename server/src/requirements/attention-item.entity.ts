import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { AttentionReason } from '@libs/contracts';

/**
 * One reason a Requirement needs its person (issue 47), open while its cause holds: deleted when
 * it clears. Written only by the attention feature; loaded beside the Requirement for its
 * snapshot, as its landing row is.
 */
@Entity('attention_item')
@Index('attention_item_reason', ['requirementId', 'reason'], { unique: true })
@Index('attention_item_person', ['personId'])
export class AttentionItemEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') reason!: AttentionReason;
  @Column('varchar') since!: string;
  @Column('varchar') summary!: string;
  @Column('varchar') personId!: string;
  @Column('varchar') personName!: string;
}
