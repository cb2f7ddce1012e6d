import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46 §5: the agent's working state at each RD run's start and end (and before a rewind), as
 * a commit under a private ref of the person's repository; a rewind restores one. The rows go with
 * their Requirement (ON DELETE CASCADE); the refs with a reaction to the purge.
 */
export class Checkpoints1766539800000 implements MigrationInterface {
  name = 'Checkpoints1766539800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE requirement_checkpoint (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      run_id varchar,
      kind varchar NOT NULL,
      at varchar NOT NULL,
      commit_sha varchar NOT NULL,
      head varchar NOT NULL,
      files_changed integer NOT NULL
    )`);
    await q.query('CREATE INDEX requirement_checkpoint_requirement ON requirement_checkpoint (requirement_id, at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE requirement_checkpoint');
  }
}
