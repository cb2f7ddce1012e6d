import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 18 §1, budgets: a Requirement's limits, when a run reached them, and its RD runs' usage
 * summed on the Requirement (kept in step as each run closes, so snapshots never sum runs).
 * Existing Requirements start with the usage their RD runs recorded and no budget. Dollars are
 * double precision on both stores: PostgreSQL's `real` is 4 bytes and would read a typed 0.1 back
 * as 0.100000001.
 */
export class RequirementBudgets1765584000000 implements MigrationInterface {
  name = 'RequirementBudgets1765584000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement ADD COLUMN budget_max_tokens integer`);
    await q.query(`ALTER TABLE requirement ADD COLUMN budget_max_cost_usd double precision`);
    await q.query(`ALTER TABLE requirement ADD COLUMN budget_reached_at varchar`);
    await q.query(`ALTER TABLE requirement ADD COLUMN usage_input_tokens integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE requirement ADD COLUMN usage_output_tokens integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE requirement ADD COLUMN usage_cost_usd double precision`);
    // Plain correlated subqueries: the same statement on both stores; SUM over no cost is NULL.
    await q.query(`UPDATE requirement SET
      usage_input_tokens = COALESCE((SELECT SUM(r.input_tokens) FROM agent_run r WHERE r.requirement_id = requirement.id AND r.role = 'rd'), 0),
      usage_output_tokens = COALESCE((SELECT SUM(r.output_tokens) FROM agent_run r WHERE r.requirement_id = requirement.id AND r.role = 'rd'), 0),
      usage_cost_usd = (SELECT SUM(r.cost_usd) FROM agent_run r WHERE r.requirement_id = requirement.id AND r.role = 'rd')
      WHERE EXISTS (SELECT 1 FROM agent_run r WHERE r.requirement_id = requirement.id AND r.role = 'rd')`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const column of [
      'usage_cost_usd',
      'usage_output_tokens',
      'usage_input_tokens',
      'budget_reached_at',
      'budget_max_cost_usd',
      'budget_max_tokens',
    ]) {
      await q.query(`ALTER TABLE requirement DROP COLUMN ${column}`);
    }
  }
}
