import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One searchable text: a Requirement's title and description (`messageId` null) or one message
 * of its conversation. Its `rowId` is the row of the full-text index (`search_fts`) that holds
 * the text, so a match leads back to the Requirement and the message it came from.
 */
@Entity('search_document')
@Index('idx_search_document_requirement', ['requirementId', 'messageId'])
export class SearchDocumentEntity {
  @PrimaryGeneratedColumn({ type: 'integer' }) rowId!: number;
  @Column('varchar') requirementId!: string;
  @Column('varchar', { nullable: true }) messageId!: string | null;
  @Column('integer', { nullable: true }) sequence!: number | null;
}
