import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One searchable text: a Requirement's title and description (`messageId` null) or one message
 * of its conversation (`title` empty). On SQLite the FTS5 index `search_fts` is an external-content
 * index of this table, kept in step by triggers; on PostgreSQL a GIN index over its tsvector.
 */
@Entity('search_document')
@Index('idx_search_document_requirement', ['requirementId', 'messageId'])
export class SearchDocumentEntity {
  @PrimaryGeneratedColumn({ type: 'integer' }) rowId!: number;
  @Column('varchar') requirementId!: string;
  @Column('varchar', { nullable: true }) messageId!: string | null;
  @Column('integer', { nullable: true }) sequence!: number | null;
  @Column('text') title!: string;
  @Column('text') body!: string;
}
