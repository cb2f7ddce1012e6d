import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 26 §13: what Agent Manager writes into a conversation carries a stable code and its
 * arguments, so the dashboard writes it in the reader's language. Null on every existing message
 * (and on people's and agents' messages): the dashboard shows their English body as before.
 */
export class MessageCodes1765933200000 implements MigrationInterface {
  name = 'MessageCodes1765933200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement_message ADD COLUMN code varchar`);
    await q.query(`ALTER TABLE requirement_message ADD COLUMN args text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement_message DROP COLUMN args');
    await q.query('ALTER TABLE requirement_message DROP COLUMN code');
  }
}
