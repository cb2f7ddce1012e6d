import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 18 §3, the cross-model review loop: a Requirement may ask for one (reviewer provider and
 * a round limit); each PR keeps where its loop is; a review says whether the loop asked for it
 * and what its verdict line said. Every existing row has no loop (null / 'off' / 0).
 */
export class ReviewLoop1765670400000 implements MigrationInterface {
  name = 'ReviewLoop1765670400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement ADD COLUMN auto_review_provider varchar`);
    await q.query(`ALTER TABLE requirement ADD COLUMN auto_review_max_rounds integer`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_state varchar NOT NULL DEFAULT 'off'`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_round integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_max_rounds integer`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_provider varchar`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_head_sha varchar`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN auto_review_outcome varchar`);
    await q.query(`ALTER TABLE review_request ADD COLUMN verdict varchar`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const column of ['verdict']) {
      await q.query(`ALTER TABLE review_request DROP COLUMN ${column}`);
    }
    for (const column of [
      'auto_review_outcome',
      'auto_review_head_sha',
      'auto_review_provider',
      'auto_review_max_rounds',
      'auto_review_round',
      'auto_review_state',
    ]) {
      await q.query(`ALTER TABLE pull_request DROP COLUMN ${column}`);
    }
    for (const column of ['auto_review_max_rounds', 'auto_review_provider']) {
      await q.query(`ALTER TABLE requirement DROP COLUMN ${column}`);
    }
  }
}
