import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { MessageAuthor, SystemMessageArgs, SystemMessageCode } from '@libs/contracts';

@Entity('requirement_message')
@Index('idx_message_requirement_sequence', ['requirementId', 'sequence'], { unique: true })
export class RequirementMessageEntity {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('varchar')
  requirementId!: string;

  @Column('varchar')
  sessionId!: string;

  @Column('varchar', { nullable: true })
  runId!: string | null;

  @Column('varchar', { nullable: true })
  sourceRequirementId!: string | null;

  @Column('varchar')
  author!: MessageAuthor;

  /** On a person's message: who wrote it (their stable id and name then); null otherwise and on older rows. */
  @Column('varchar', { nullable: true })
  authorId!: string | null;

  @Column('varchar', { nullable: true })
  authorName!: string | null;

  @Column('text')
  body!: string;

  @Column('integer')
  sequence!: number;

  @Column('boolean')
  deliverToRd!: boolean;

  @Column('varchar', { nullable: true })
  source!: string | null;

  @Column('varchar', { nullable: true })
  triggerId!: string | null;

  @Column('simple-json', { nullable: true })
  metadata!: Record<string, unknown> | null;

  /** What Agent Manager's own message says, for readers in another language (issue 26 §13). */
  @Column('varchar', { nullable: true })
  code!: SystemMessageCode | null;

  @Column('simple-json', { nullable: true })
  args!: SystemMessageArgs | null;

  @Column('varchar')
  createdAt!: string;
}
