import { Client } from 'pg';
import { DataSource } from 'typeorm';

import { ENTITIES, usePlainIntegers } from '../core.module';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

const URL = process.env.TEST_DATABASE_URL;
/** Indexes an entity cannot declare (the full-text GIN index over a tsvector expression: the search migration's PostgreSQL half). */
const EXPRESSION_INDEXES = ['idx_search_document_text'];

interface TableShape {
  columns: Record<string, { type: string; notNull: boolean; default: string | null }>;
  primaryKey: string[];
  indexes: Record<string, string>;
}

/** Columns (type, nullability, default), primary key and the other indexes' definitions, schema names taken out. */
async function shapeOf(client: Client, schema: string, tables: string[]): Promise<Record<string, TableShape>> {
  const strip = (text: string | null) => text?.split(`${schema}.`).join('') ?? null;
  const shapes: Record<string, TableShape> = {};
  for (const table of tables) {
    const columns = await client.query<{
      column_name: string;
      data_type: string;
      is_nullable: string;
      column_default: string | null;
    }>(
      'SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
      [schema, table],
    );
    const primaryKey = await client.query<{ column_name: string }>(
      `SELECT k.column_name FROM information_schema.table_constraints c JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
        WHERE c.table_schema = $1 AND c.table_name = $2 AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position`,
      [schema, table],
    );
    const indexes = await client.query<{ indexname: string; indexdef: string }>(
      `SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = $1 AND i.tablename = $2
          AND NOT EXISTS (SELECT 1 FROM information_schema.table_constraints c WHERE c.table_schema = $1 AND c.constraint_name = i.indexname AND c.constraint_type = 'PRIMARY KEY')`,
      [schema, table],
    );
    const shape: TableShape = { columns: {}, indexes: {}, primaryKey: primaryKey.rows.map((r) => r.column_name) };
    for (const c of columns.rows) {
      shape.columns[c.column_name] = {
        default: strip(c.column_default),
        notNull: c.is_nullable === 'NO',
        type: c.data_type,
      };
    }
    for (const i of indexes.rows) {
      if (EXPRESSION_INDEXES.includes(i.indexname)) {
        continue;
      }
      shape.indexes[i.indexname] = strip(i.indexdef)!.replace(/"/g, '');
    }
    shapes[table] = shape;
  }
  return shapes;
}

/**
 * schema.spec.ts on PostgreSQL (runs with TEST_DATABASE_URL, in npm run test:postgres): the
 * migrations build, in a schema of their own, what TypeORM renders from the entities in another.
 */
(URL ? describe : describe.skip)('schema from the migrations on PostgreSQL', () => {
  const suffix = `${process.pid}_${Date.now()}`;
  const migratedSchema = `am_spec_migrated_${suffix}`;
  const synchronizedSchema = `am_spec_synchronized_${suffix}`;
  let client: Client;
  const sources: DataSource[] = [];

  beforeAll(async () => {
    usePlainIntegers();
    client = new Client({ connectionString: URL });
    await client.connect();
    for (const schema of [migratedSchema, synchronizedSchema]) {
      await client.query(`CREATE SCHEMA ${schema}`);
    }
    const common = {
      entities: ENTITIES,
      namingStrategy: new SnakeNamingStrategy(),
      type: 'postgres' as const,
      url: URL,
    };
    sources.push(
      await new DataSource({
        ...common,
        extra: { options: `-c search_path=${migratedSchema}` },
        migrations: MIGRATIONS,
        migrationsRun: true,
        schema: migratedSchema,
      }).initialize(),
      await new DataSource({
        ...common,
        extra: { options: `-c search_path=${synchronizedSchema}` },
        schema: synchronizedSchema,
        synchronize: true,
      }).initialize(),
    );
  });

  afterAll(async () => {
    await Promise.all(sources.map((s) => s.destroy()));
    for (const schema of [migratedSchema, synchronizedSchema]) {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
    await client.end();
  });

  it('builds every entity table exactly as the entity metadata describes it', async () => {
    const tables = sources[0].entityMetadatas.map((m) => m.tableName).sort();
    const migrated = await shapeOf(client, migratedSchema, tables);
    const synchronized = await shapeOf(client, synchronizedSchema, tables);
    expect(Object.keys(migrated.requirement?.columns ?? {}).length).toBeGreaterThan(5);
    expect(migrated.agent_run?.indexes.idx_run_active_session).toMatch(/WHERE \(+status\)?::text = 'running'/);
    expect(migrated).toEqual(synchronized);
  });

  it('declares nothing in the entities that the migrations leave out', async () => {
    const names = async (schema: string) =>
      (
        await client.query<{ table_name: string }>(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
          [schema],
        )
      ).rows.map((r) => r.table_name);
    const fromMigrations = await names(migratedSchema);
    expect((await names(synchronizedSchema)).filter((t) => !fromMigrations.includes(t))).toEqual([]);
    // Without an entity: TypeORM's own table, and the attachments' bytes (no TypeORM column type is both SQLite's blob and PostgreSQL's bytea).
    expect(fromMigrations.filter((t) => !sources[0].entityMetadatas.some((m) => m.tableName === t))).toEqual([
      'attachment_chunk',
      'migrations',
    ]);
  });
});
