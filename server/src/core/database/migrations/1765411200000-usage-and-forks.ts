import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 16. Usage totals: a run's cost when the provider reports it (Claude Code's result carries
 * `total_cost_usd`), and an index on the start time so the workspace's totals for today or this
 * week read only that window's runs. Forks: a Requirement forked from another names it.
 */
export class UsageAndForks1765411200000 implements MigrationInterface {
  name = 'UsageAndForks1765411200000';

  async up(q: QueryRunner): Promise<void> {
    // Null for every existing row: no cost was recorded and nothing was forked before. Double
    // precision on both stores (PostgreSQL's `real` is 4 bytes; SQLite's is 8).
    await q.query(`ALTER TABLE agent_run ADD COLUMN cost_usd double precision`);
    await q.query(`CREATE INDEX idx_run_started_at ON agent_run (started_at)`);
    await q.query(`ALTER TABLE requirement ADD COLUMN forked_from_requirement_id varchar`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement DROP COLUMN forked_from_requirement_id');
    await q.query('DROP INDEX idx_run_started_at');
    await q.query('ALTER TABLE agent_run DROP COLUMN cost_usd');
  }
}
