import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 29 (team mode): the runner a Requirement runs on, set by its first run on a board (the
 * runner whose person started it). Null off a board, and on every existing row.
 */
export class RequirementRunner1766193000000 implements MigrationInterface {
  name = 'RequirementRunner1766193000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement ADD COLUMN runner_id varchar`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement DROP COLUMN runner_id');
  }
}
