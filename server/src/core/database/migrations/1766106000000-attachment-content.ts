import { MigrationInterface, QueryRunner } from 'typeorm';

import { isPostgres } from './dialect';

/**
 * Issue 29 (team mode): an attachment's bytes live in the board's database, so every manager
 * sharing it can serve and deliver them. Stored in chunks (`ATTACHMENT_CHUNK_BYTES` each, in
 * order), so that a download streams one chunk at a time and a copy between stores pages by
 * chunk. The column is a blob on SQLite and bytea on PostgreSQL: the one place the two differ.
 *
 * Files of attachments uploaded before this migration are read into the table by the
 * attachments feature when the manager starts (it knows the data directory; a migration does
 * not): see AttachmentsService.importFiles.
 */
export class AttachmentContent1766106000000 implements MigrationInterface {
  name = 'AttachmentContent1766106000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE attachment_chunk (
      attachment_id varchar NOT NULL REFERENCES message_attachment(id) ON DELETE CASCADE,
      chunk_index integer NOT NULL,
      bytes ${isPostgres(q) ? 'bytea' : 'blob'} NOT NULL,
      PRIMARY KEY (attachment_id, chunk_index)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE attachment_chunk');
  }
}
