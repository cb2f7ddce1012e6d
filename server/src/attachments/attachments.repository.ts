import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { MessageAttachmentEntity } from './message-attachment.entity';

/** The `message_attachment` table: uploads, and the message each was given to. Nothing else names it. */
@Injectable()
export class AttachmentsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, row: MessageAttachmentEntity): void {
    uow.insert(MessageAttachmentEntity, { ...row });
  }

  findById(id: string): Promise<MessageAttachmentEntity | null> {
    return this.database.read(MessageAttachmentEntity).findOneBy({ id });
  }

  /** These rows as the unit sees them (any that exist). */
  async findByIdsIn(uow: UnitOfWork, ids: string[]): Promise<MessageAttachmentEntity[]> {
    return ids.length === 0 ? [] : (await uow.reads()).createQueryBuilder(MessageAttachmentEntity, 'a').where('a.id IN (:...ids)', { ids }).getMany();
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
      .where('a.requirement_id = :requirementId AND m.deliver_to_rd = TRUE AND m.sequence <= :toSequence', { requirementId, toSequence })
      .getMany();
  }

  /** The attachments of many messages in one query, in upload order. */
  ofMessages(messageIds: string[]): Promise<MessageAttachmentEntity[]> {
    return messageIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager.createQueryBuilder(MessageAttachmentEntity, 'a').where('a.message_id IN (:...ids)', { ids: messageIds }).orderBy('a.created_at', 'ASC').getMany();
  }

  /** Every attachment of these Requirements, as the unit sees them (what a purge must remove from disk). */
  async ofRequirementsIn(uow: UnitOfWork, requirementIds: string[]): Promise<MessageAttachmentEntity[]> {
    return requirementIds.length === 0
      ? []
      : (await uow.reads()).createQueryBuilder(MessageAttachmentEntity, 'a').where('a.requirement_id IN (:...ids)', { ids: requirementIds }).getMany();
  }

  /** Which of these IDs still have a row (committed). */
  async existingIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) {
      return new Set();
    }
    const rows = await this.database.read(MessageAttachmentEntity).createQueryBuilder('a').select('a.id', 'id').where('a.id IN (:...ids)', { ids }).getRawMany<{ id: string }>();
    return new Set(rows.map((row) => row.id));
  }
}
