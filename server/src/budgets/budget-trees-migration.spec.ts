import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';

import { usePlainIntegers } from '../core/core.module';
import { MIGRATIONS } from '../core/database/migrations';
import { BudgetTrees1765846800000 } from '../core/database/migrations/1765846800000-budget-trees';
import { SnakeNamingStrategy } from '../core/database/snake-naming.strategy';

const URL = process.env.TEST_DATABASE_URL;

/**
 * A workspace from before budget trees (issue 25 §4): its migration starts each Requirement's tree
 * usage at its own plus every descendant's, at any depth, cost only where one was reported. On
 * SQLite always, and on PostgreSQL with TEST_DATABASE_URL (the same statements on both stores).
 */
describe.each([
  ['SQLite', true],
  ['PostgreSQL', URL !== undefined],
])('the budget trees migration on %s', (_store, enabled) => {
  const suffix = `${process.pid}_${Date.now()}`;
  let dir: string;
  let client: Client | undefined;
  let db: DataSource;

  (enabled ? beforeAll : () => undefined)(async () => {
    const before = MIGRATIONS.filter((m) => m !== BudgetTrees1765846800000);
    const common = { migrations: before, migrationsRun: true, namingStrategy: new SnakeNamingStrategy() };
    let options: DataSourceOptions;
    if (_store === 'SQLite') {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-budget-trees-'));
      options = { ...common, database: path.join(dir, 'f.sqlite'), type: 'sqlite' };
    } else {
      usePlainIntegers();
      client = new Client({ connectionString: URL });
      await client.connect();
      await client.query(`CREATE SCHEMA am_spec_trees_${suffix}`);
      options = {
        ...common,
        extra: { options: `-c search_path=am_spec_trees_${suffix}` },
        schema: `am_spec_trees_${suffix}`,
        type: 'postgres',
        url: URL,
      };
    }
    db = await new DataSource(options).initialize();
    // grandparent → parent → (child one, child two); a lone Requirement beside them.
    const rows: Array<[string, string | null, number, number, number | null]> = [
      ['req_g', null, 10, 1, null],
      ['req_p', 'req_g', 100, 10, 0.5],
      ['req_c1', 'req_p', 1000, 100, null],
      ['req_c2', 'req_p', 5, 5, 0.25],
      ['req_x', null, 7, 3, 1],
    ];
    for (const [id, parent, input, output, cost] of rows) {
      await db.query(
        `INSERT INTO requirement (id, title, description, status, provider, created_by, parent_requirement_id, created_at, updated_at, usage_input_tokens, usage_output_tokens, usage_cost_usd)
         VALUES ('${id}', '${id}', '', 'doing', 'codex', '${parent ? 'rd_agent' : 'human'}', ${parent ? `'${parent}'` : 'NULL'}, 't', 't', ${input}, ${output}, ${cost ?? 'NULL'})`,
      );
    }
    await new BudgetTrees1765846800000().up(db.createQueryRunner());
  });

  (enabled ? afterAll : () => undefined)(async () => {
    await db?.destroy();
    if (client) {
      await client.query(`DROP SCHEMA IF EXISTS am_spec_trees_${suffix} CASCADE`);
      await client.end();
    }
    if (dir) {
      fs.rmSync(dir, { force: true, recursive: true });
    }
  });

  (enabled ? it : it.skip)('starts every tree usage at its own plus its descendants’', async () => {
    const trees = await db.query<Array<{ id: string; input: number; output: number; cost: number | null }>>(
      'SELECT id, tree_usage_input_tokens AS input, tree_usage_output_tokens AS output, tree_usage_cost_usd AS cost FROM requirement ORDER BY id',
    );
    expect(trees.map((t) => ({ ...t, input: Number(t.input), output: Number(t.output) }))).toEqual([
      { cost: null, id: 'req_c1', input: 1000, output: 100 },
      { cost: 0.25, id: 'req_c2', input: 5, output: 5 },
      { cost: 0.75, id: 'req_g', input: 1115, output: 116 },
      { cost: 0.75, id: 'req_p', input: 1105, output: 115 },
      { cost: 1, id: 'req_x', input: 7, output: 3 },
    ]);
  });
});
