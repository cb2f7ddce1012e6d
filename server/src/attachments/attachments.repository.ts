import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { MessageAttachmentEntity } from './message-attachment.entity';

/**
 * An attachment's bytes are stored in chunks of this size (the last one shorter), so that a
 * download holds one chunk in memory at a time, not the whole file.
 */
export const ATTACHMENT_CHUNK_BYTES = 1024 * 1024;

/**
 * The `message_attachment` table (uploads, and the message each was given to) and
 * `attachment_chunk` (their bytes, in order; no entity: its column is a blob on SQLite and
 * bytea on PostgreSQL, which no one TypeORM type names). Nothing else names either.
 */
@Injectable()
export class AttachmentsRepository {
  constructor(private readonly database: Database) {}

  /**
   * Stages an attachment's bytes, chunk by chunk, in the unit that inserts its row (or, with
   * `onConflict: 'ignore'`, into a row that has none yet: the import of a file from before the
   * bytes were in the database, which a second import must leave as the first wrote it).
   */
  insertContent(
    uow: UnitOfWork,
    attachmentId: string,
    chunks: readonly Buffer[],
    options: { onConflict?: 'ignore' } = {},
  ): void {
    chunks.forEach((bytes, index) =>
      uow.execute(
        `INSERT INTO attachment_chunk (attachment_id, chunk_index, bytes) VALUES (?, ?, ?)${options.onConflict === 'ignore' ? ' ON CONFLICT DO NOTHING' : ''}`,
        [attachmentId, index, bytes],
      ),
    );
  }

  /** One chunk of an attachment's bytes (committed), or null if there is none at that index. */
  async chunk(attachmentId: string, index: number): Promise<Buffer | null> {
    const row = await this.database.readManager
      .createQueryBuilder()
      .select('c.bytes', 'bytes')
      .from('attachment_chunk', 'c')
      .where('c.attachment_id = :attachmentId AND c.chunk_index = :index', { attachmentId, index })
      .getRawOne<{ bytes: Buffer }>();
    return row ? row.bytes : null;
  }

  /** Attachments whose bytes are not in the database: uploaded before they were, by the files they had then. */
  withoutContent(): Promise<MessageAttachmentEntity[]> {
    return this.database.readManager
      .createQueryBuilder(MessageAttachmentEntity, 'a')
      .where('NOT EXISTS (SELECT 1 FROM attachment_chunk c WHERE c.attachment_id = a.id)')
      .orderBy('a.created_at', 'ASC')
      .getMany();
  }

  insert(uow: UnitOfWork, row: MessageAttachmentEntity): void {
    uow.insert(MessageAttachmentEntity, { ...row });
  }

  findById(id: string): Promise<MessageAttachmentEntity | null> {
    return this.database.read(MessageAttachmentEntity).findOneBy({ id });
  }

  /** These rows as the unit sees them (any that exist). */
  async findByIdsIn(uow: UnitOfWork, ids: string[]): Promise<MessageAttachmentEntity[]> {
    return ids.length === 0
      ? []
      : (await uow.reads())
          .createQueryBuilder(MessageAttachmentEntity, 'a')
          .where('a.id IN (:...ids)', { ids })
          .getMany();
  }

  /** Gives these uploads to a message. */
  giveToMessage(uow: UnitOfWork, ids: string[], messageId: string): void {
    uow.update(MessageAttachmentEntity, { messageId }, { id: ids });
  }

  /**
   * A Requirement's attachments held by deliverable messages up to `toSequence`. The one read
   * that joins the conversation: which messages were delivered is the messages' fact, which
   * file each holds is ours. Joined by table name: attachments sit below the messages feature,
   * which claims them.
   */
  deliveredUpTo(requirementId: string, toSequence: number): Promise<MessageAttachmentEntity[]> {
    return this.database.readManager
      .createQueryBuilder(MessageAttachmentEntity, 'a')
      .innerJoin('requirement_message', 'm', 'm.id = a.message_id')
      .where('a.requirement_id = :requirementId AND m.deliver_to_rd = TRUE AND m.sequence <= :toSequence', {
        requirementId,
        toSequence,
      })
      .getMany();
  }

  /** The attachments of many messages in one query, in upload order. */
  ofMessages(messageIds: string[]): Promise<MessageAttachmentEntity[]> {
    return messageIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(MessageAttachmentEntity, 'a')
          .where('a.message_id IN (:...ids)', { ids: messageIds })
          .orderBy('a.created_at', 'ASC')
          .getMany();
  }

  /** Every attachment of these Requirements, as the unit sees them (what a purge must remove from disk). */
  async ofRequirementsIn(uow: UnitOfWork, requirementIds: string[]): Promise<MessageAttachmentEntity[]> {
    return requirementIds.length === 0
      ? []
      : (await uow.reads())
          .createQueryBuilder(MessageAttachmentEntity, 'a')
          .where('a.requirement_id IN (:...ids)', { ids: requirementIds })
          .getMany();
  }

  /** Which of these IDs still have a row (committed). */
  async existingIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) {
      return new Set();
    }
    const rows = await this.database
      .read(MessageAttachmentEntity)
      .createQueryBuilder('a')
      .select('a.id', 'id')
      .where('a.id IN (:...ids)', { ids })
      .getRawMany<{ id: string }>();
    return new Set(rows.map((row) => row.id));
  }
}
