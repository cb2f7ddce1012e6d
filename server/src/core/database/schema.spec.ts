import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { DataSource } from 'typeorm';

import { ENTITIES } from '../core.module';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

interface TableShape {
  columns: Record<string, { type: string; notNull: boolean; default: string | null; primaryKey: boolean }>;
  indexes: Record<string, { unique: boolean; columns: string[]; where: string | null }>;
}

/** Tables, columns (type, nullability, default, key) and indexes (columns, uniqueness, WHERE) as SQLite has them. */
async function shapeOf(dataSource: DataSource, tables: string[]): Promise<Record<string, TableShape>> {
  const shapes: Record<string, TableShape> = {};
  for (const table of tables) {
    const columns = await dataSource.query<
      Array<{ name: string; type: string; nn: number; dflt: string | null; pk: number }>
    >(`SELECT name, type, "notnull" AS nn, dflt_value AS dflt, pk FROM pragma_table_info(?)`, [table]);
    const indexes = await dataSource.query<Array<{ name: string; uq: number }>>(
      `SELECT name, "unique" AS uq FROM pragma_index_list(?) WHERE origin = 'c'`,
      [table],
    );
    const shape: TableShape = { columns: {}, indexes: {} };
    for (const c of columns) {
      // `DEFAULT 0` and `DEFAULT (0)` are one default.
      shape.columns[c.name] = {
        default: c.dflt?.replace(/^\((.*)\)$/, '$1') ?? null,
        notNull: c.nn === 1,
        primaryKey: c.pk > 0,
        type: c.type.toLowerCase(),
      };
    }
    for (const index of indexes) {
      const keys = await dataSource.query<Array<{ name: string }>>(
        `SELECT name FROM pragma_index_info(?) ORDER BY seqno`,
        [index.name],
      );
      const [row] = await dataSource.query<Array<{ sql: string }>>(
        `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`,
        [index.name],
      );
      const where =
        /\bWHERE\s+(.*)$/is
          .exec(row?.sql ?? '')?.[1]
          ?.replace(/"/g, '')
          .trim() ?? null;
      shape.indexes[index.name] = { columns: keys.map((k) => k.name), unique: index.uq === 1, where };
    }
    shapes[table] = shape;
  }
  return shapes;
}

/**
 * The schema is what the migrations build (never `synchronize`), and the entities are what the
 * code reads and writes: both must describe the same tables, columns, nullability, defaults and
 * indexes, or a query that works against one fails against the other. The entity side is TypeORM's
 * own rendering of the metadata (`synchronize` on another empty file).
 *
 * Foreign keys are left out: the entities declare no relations (rows are written as plain
 * columns), so the keys and their ON DELETE rules live in the migrations only.
 */
describe('schema from the migrations', () => {
  let dir: string;
  let migrated: DataSource;
  let synchronized: DataSource;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-schema-'));
    const common = { entities: ENTITIES, namingStrategy: new SnakeNamingStrategy(), type: 'sqlite' as const };
    migrated = await new DataSource({
      ...common,
      database: path.join(dir, 'migrated.sqlite'),
      migrations: MIGRATIONS,
      migrationsRun: true,
    }).initialize();
    synchronized = await new DataSource({
      ...common,
      database: path.join(dir, 'synchronized.sqlite'),
      synchronize: true,
    }).initialize();
  });

  afterAll(async () => {
    await migrated.destroy();
    await synchronized.destroy();
    fs.rmSync(dir, { force: true, recursive: true });
  });

  it('builds every entity table exactly as the entity metadata describes it', async () => {
    const tables = migrated.entityMetadatas.map((m) => m.tableName).sort();
    expect(await shapeOf(migrated, tables)).toEqual(await shapeOf(synchronized, tables));
  });

  it('declares nothing in the entities that the migrations leave out', async () => {
    const names = async (dataSource: DataSource) =>
      (
        await dataSource.query<Array<{ name: string }>>(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
        )
      ).map((r) => r.name);
    const fromMigrations = await names(migrated);
    // Without an entity: TypeORM's own table, the attachments' bytes (no TypeORM column type is
    // both SQLite's blob and PostgreSQL's bytea: the attachments repository names it in SQL), and
    // the full-text index (a virtual table and FTS5's shadow tables of it).
    expect((await names(synchronized)).filter((t) => !fromMigrations.includes(t))).toEqual([]);
    expect(fromMigrations.filter((t) => !migrated.entityMetadatas.some((m) => m.tableName === t))).toEqual([
      'attachment_chunk',
      'migrations',
      'search_fts',
      'search_fts_config',
      'search_fts_data',
      'search_fts_docsize',
      'search_fts_idx',
      'search_vocab',
    ]);
  });
});
