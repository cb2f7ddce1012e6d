import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47 §1: why a Requirement needs its person, one row per open reason (a cleared one is
 * deleted). The rows go with their Requirement (ON DELETE CASCADE).
 */
export class Attention1766542000000 implements MigrationInterface {
  name = 'Attention1766542000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE attention_item (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      reason varchar NOT NULL,
      since varchar NOT NULL,
      summary varchar NOT NULL,
      person_id varchar NOT NULL,
      person_name varchar NOT NULL
    )`);
    await q.query('CREATE UNIQUE INDEX attention_item_reason ON attention_item (requirement_id, reason)');
    await q.query('CREATE INDEX attention_item_person ON attention_item (person_id)');
    // What a runner going offline may touch: the sessions running now.
    await q.query('CREATE INDEX idx_agent_session_state ON agent_session (state)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX idx_agent_session_state');
    await q.query('DROP TABLE attention_item');
  }
}
