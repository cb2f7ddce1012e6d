import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46 §8: the agent's work as its land left it (the branch after a squash or rebase follows
 * the landed commit; after a merge it stays at the head merged). The same work now means nothing
 * new to land: the land menu says "Landed as <commit>" instead of offering a land.
 */
export class LandedWork1766541000000 implements MigrationInterface {
  name = 'LandedWork1766541000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement_landing ADD COLUMN landed_work varchar');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement_landing DROP COLUMN landed_work');
  }
}
