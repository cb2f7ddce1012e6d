import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { AttachmentKind } from '@libs/contracts';

@Entity('message_attachment')
@Index('idx_attachment_requirement', ['requirementId'])
@Index('idx_attachment_message', ['messageId'])
export class MessageAttachmentEntity {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('varchar')
  requirementId!: string;

  /** Null until a message takes it; then it belongs to that message for good. */
  @Column('varchar', { nullable: true })
  messageId!: string | null;

  /** The sanitized name the uploader gave; shown and offered on download, never used as a path. */
  @Column('varchar')
  fileName!: string;

  @Column('varchar')
  kind!: AttachmentKind;

  @Column('varchar')
  mediaType!: string;

  @Column('integer')
  byteSize!: number;

  @Column('varchar')
  createdAt!: string;
}
