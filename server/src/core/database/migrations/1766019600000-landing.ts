import { MigrationInterface, QueryRunner } from 'typeorm';

/** Issue 28: each Requirement's landing and conflict-radar state, and the merge queue. */
export class Landing1766019600000 implements MigrationInterface {
  name = 'Landing1766019600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE requirement_landing (
      requirement_id varchar PRIMARY KEY NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      merges_cleanly boolean,
      conflict_paths text NOT NULL,
      conflicts_with text NOT NULL,
      behind_by integer,
      base_sha varchar,
      head_sha varchar,
      checked_at varchar,
      landed_at varchar,
      landed_method varchar,
      landed_commit varchar,
      pending_commit varchar,
      pending_method varchar,
      pending_base_ref varchar,
      updated_at varchar NOT NULL
    )`);
    await q.query(`CREATE TABLE landing_queue (
      requirement_id varchar PRIMARY KEY NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      position integer NOT NULL,
      method varchar NOT NULL,
      state varchar NOT NULL,
      reason text,
      conflict_paths text NOT NULL,
      added_at varchar NOT NULL,
      updated_at varchar NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE landing_queue');
    await q.query('DROP TABLE requirement_landing');
  }
}
