import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 50: features react to committed events through the event log itself, each reaction with
 * a durable cursor (how far it got), so a crash between a commit and its reactions loses none.
 */
export class ReactionCursors1766452200000 implements MigrationInterface {
  name = 'ReactionCursors1766452200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE reaction_cursor (
      runner varchar NOT NULL,
      reaction varchar NOT NULL,
      event_id integer NOT NULL,
      updated_at varchar NOT NULL,
      PRIMARY KEY (runner, reaction)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE reaction_cursor');
  }
}
