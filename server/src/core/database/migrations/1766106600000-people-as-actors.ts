import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 29 (team mode): a person's events and messages name the person. Null on every existing
 * row: older events keep `{ kind: 'human', id: null }`, older messages show no name.
 */
export class PeopleAsActors1766106600000 implements MigrationInterface {
  name = 'PeopleAsActors1766106600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE manager_event ADD COLUMN actor_name varchar`);
    await q.query(`ALTER TABLE manager_event ADD COLUMN actor_email varchar`);
    await q.query(`ALTER TABLE requirement_message ADD COLUMN author_id varchar`);
    await q.query(`ALTER TABLE requirement_message ADD COLUMN author_name varchar`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement_message DROP COLUMN author_name');
    await q.query('ALTER TABLE requirement_message DROP COLUMN author_id');
    await q.query('ALTER TABLE manager_event DROP COLUMN actor_email');
    await q.query('ALTER TABLE manager_event DROP COLUMN actor_name');
  }
}
