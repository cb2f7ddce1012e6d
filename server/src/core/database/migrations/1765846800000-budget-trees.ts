import { MigrationInterface, QueryRunner } from 'typeorm';

import { isPostgres } from './dialect';

/**
 * Issue 25 §4, budgets across the tree an agent spawns: each Requirement keeps its tree's usage
 * (its own and every Requirement proposed below it), which its budget caps. Existing rows start
 * with their own usage plus their descendants' (the parent links are followed in code: a few
 * proposals in a workspace of thousands of Requirements, and the same statements on both stores).
 */
export class BudgetTrees1765846800000 implements MigrationInterface {
  name = 'BudgetTrees1765846800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement ADD COLUMN tree_usage_input_tokens integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE requirement ADD COLUMN tree_usage_output_tokens integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE requirement ADD COLUMN tree_usage_cost_usd double precision`);
    await q.query(
      `UPDATE requirement SET tree_usage_input_tokens = usage_input_tokens, tree_usage_output_tokens = usage_output_tokens, tree_usage_cost_usd = usage_cost_usd`,
    );
    const children: Array<{ id: string; parent: string; input: number; output: number; cost: number | null }> =
      await q.query(
        `SELECT id, parent_requirement_id AS parent, usage_input_tokens AS input, usage_output_tokens AS output, usage_cost_usd AS cost
         FROM requirement WHERE parent_requirement_id IS NOT NULL`,
      );
    const parentOf = new Map(children.map((child) => [child.id, child.parent]));
    const added = new Map<string, { input: number; output: number; cost: number | null }>();
    for (const child of children) {
      // Up the chain (bounded: parents are set at creation, so there is no cycle, but a bound costs nothing).
      let ancestor: string | undefined = child.parent;
      for (let depth = 0; ancestor !== undefined && depth < 1000; depth++) {
        const sum = added.get(ancestor) ?? { cost: null, input: 0, output: 0 };
        sum.input += Number(child.input);
        sum.output += Number(child.output);
        sum.cost = child.cost === null ? sum.cost : (sum.cost ?? 0) + Number(child.cost);
        added.set(ancestor, sum);
        ancestor = parentOf.get(ancestor);
      }
    }
    // Positional parameters as each driver numbers them.
    const p = (n: number) => (isPostgres(q) ? `$${n}` : `?${n}`);
    for (const [id, sum] of added) {
      const cost = sum.cost === null ? '' : `, tree_usage_cost_usd = COALESCE(tree_usage_cost_usd, 0) + ${p(4)}`;
      await q.query(
        `UPDATE requirement SET tree_usage_input_tokens = tree_usage_input_tokens + ${p(2)}, tree_usage_output_tokens = tree_usage_output_tokens + ${p(3)}${cost} WHERE id = ${p(1)}`,
        sum.cost === null ? [id, sum.input, sum.output] : [id, sum.input, sum.output, sum.cost],
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const column of ['tree_usage_cost_usd', 'tree_usage_output_tokens', 'tree_usage_input_tokens']) {
      await q.query(`ALTER TABLE requirement DROP COLUMN ${column}`);
    }
  }
}
