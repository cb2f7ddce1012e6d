import { createHash } from 'node:crypto';
import * as fs from 'node:fs';

import { Client } from 'pg';
import { DataSource } from 'typeorm';

import { dataSourceOptions } from '../core.module';
import { MIGRATIONS } from './migrations';
import { PostgresWorkspaceLock } from './postgres/postgres-workspace-lock';
import { type PostgresStore, type SqliteStore, pgClientConfig, redactDatabaseUrl } from './store';

/** A copy that cannot start (or was refused before anything was written): one line for the CLI. */
export class StoreCopyError extends Error {}

export interface CopiedTable {
  table: string;
  rows: number;
}

export interface StoreCopyResult {
  tables: CopiedTable[];
  /** The event ids' high-water mark carried over (what SSE clients resume from). */
  lastEventId: number;
  seconds: number;
}

/** Tables of the schema that are not the workspace's data: the migrations' own log, and the writer's row. */
const NOT_COPIED = new Set(['migrations', 'am_writer']);
/** node-postgres takes at most 65,535 parameters per statement; stay well below. */
const MAX_PARAMETERS = 30_000;
const READ_PAGE = 2_000;
/** Rows per page of a table with bytes (attachment_chunk: up to a megabyte a row). */
const BYTES_PAGE = 8;

/** Rows read (and written) at a time: few of a table whose rows carry bytes, so a page stays small in memory. */
function pageOf(table: PgTable): number {
  return table.columns.some((c) => c.type === 'bytea') ? BYTES_PAGE : READ_PAGE;
}

interface PgColumn {
  name: string;
  type: string;
}

interface PgTable {
  name: string;
  columns: PgColumn[];
  primaryKey: string[];
  /** Columns that reference this same table (a Requirement's parent): written after all its rows. */
  selfReferences: string[];
  /** Tables this one references (copied first). */
  references: string[];
  /** Columns filled from a sequence (SERIAL): the sequence is moved past the copied ids. */
  serial: string[];
}

/**
 * Copies a workspace's SQLite store into a PostgreSQL schema of its own (`agent-manager db copy`),
 * for a team moving to a shared server (docs/postgresql.md).
 *
 * Safe to run at any time: the workspace's local lock must be free (its manager stopped: the
 * caller takes it) and the target's advisory lock too (no manager on the target); the target
 * schema must hold no rows. Both stores are migrated to the same version first, so the copy is
 * table by table and column by column as the migrations define them, which the target's own
 * catalog lists (a table added later is copied without a change here). Everything is written in
 * one transaction: an interrupted copy leaves the target as empty as it was. The source is only
 * read (and migrated, as its next start would). Afterwards every table's rows are read back from
 * both sides and compared, count and content.
 */
export async function copyStore(
  source: SqliteStore,
  target: PostgresStore,
  progress: (line: string) => void = () => undefined,
): Promise<StoreCopyResult> {
  const started = Date.now();
  if (!fs.existsSync(source.path)) {
    throw new StoreCopyError(
      `nothing to copy: there is no database at ${source.path} (start Agent Manager on this workspace once first)`,
    );
  }
  const lock = new PostgresWorkspaceLock(target);
  try {
    await lock.acquire();
  } catch (err) {
    throw new StoreCopyError(`cannot use ${redactDatabaseUrl(target.url)}: ${(err as Error).message}`);
  }
  const from = new DataSource({
    ...dataSourceOptions(source),
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each',
  });
  const client = new Client(pgClientConfig({ ...target, statementTimeoutMs: 0 }, 'agent-manager db copy'));
  try {
    await from.initialize();
    await migrateTarget(target);
    await client.connect();
    const tables = orderByReferences(await catalog(client, target.schema));
    const sourceTables = new Set(
      (await from.query(`SELECT name FROM sqlite_master WHERE type = 'table'`)).map((r: { name: string }) => r.name),
    );
    for (const table of tables) {
      if (!sourceTables.has(table.name)) {
        throw new StoreCopyError(`the source has no table ${table.name}: it is not at the target's schema version`);
      }
      if ((await client.query(`SELECT EXISTS (SELECT 1 FROM ${table.name}) AS taken`)).rows[0].taken) {
        throw new StoreCopyError(
          `schema ${target.schema} on ${redactDatabaseUrl(target.url)} already holds data (table ${table.name}); copy into an empty schema (DROP SCHEMA ${target.schema} CASCADE first, if it is a copy you want to replace)`,
        );
      }
    }

    const copied: CopiedTable[] = [];
    await client.query('BEGIN');
    try {
      for (const table of tables) {
        const rows = await copyTable(from, client, table);
        copied.push({ rows, table: table.name });
        progress(`${table.name}: ${rows} rows`);
      }
      for (const table of tables) {
        for (const column of table.serial) {
          await client.query(
            `SELECT setval(pg_get_serial_sequence($1, $2), GREATEST(COALESCE(MAX(${column}), 0), 1), MAX(${column}) IS NOT NULL) FROM ${table.name}`,
            [`${target.schema}.${table.name}`, column],
          );
        }
      }
      // SQLite's AUTOINCREMENT remembers ids given to events that retention has since removed;
      // on PostgreSQL am_writer.last_event_id is that mark (no id is ever given twice).
      const [mark] = await from.query<Array<{ n: number }>>(
        `SELECT MAX(n) AS n FROM (SELECT COALESCE(MAX(id), 0) AS n FROM manager_event UNION ALL SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'manager_event')`,
      );
      await client.query('UPDATE am_writer SET last_event_id = $1 WHERE id = 1', [mark.n]);
      await client.query('COMMIT');
      progress('committed; comparing both stores');
      await verify(from, client, tables);
      return { lastEventId: mark.n, seconds: (Date.now() - started) / 1000, tables: copied };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    await client.end().catch(() => undefined);
    if (from.isInitialized) {
      await from.destroy();
    }
    await lock.release();
  }
}

/** The target's tables at the latest migration, as a starting manager would leave them. */
async function migrateTarget(target: PostgresStore): Promise<void> {
  const to = new DataSource({
    ...dataSourceOptions({ ...target, poolSize: 1 }),
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each',
  });
  await to.initialize();
  await to.destroy();
}

async function catalog(client: Client, schema: string): Promise<PgTable[]> {
  const { rows: tableRows } = await client.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`,
    [schema],
  );
  const { rows: columnRows } = await client.query<{ table: string; name: string; type: string; serial: boolean }>(
    `SELECT table_name AS table, column_name AS name, data_type AS type, COALESCE(column_default LIKE 'nextval(%', FALSE) AS serial
     FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    [schema],
  );
  const { rows: keyRows } = await client.query<{
    table: string;
    kind: string;
    references: string | null;
    columns: string[];
  }>(
    `SELECT cl.relname AS table, c.contype AS kind, ref.relname AS references,
            ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, i) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.i)::text[] AS columns
     FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid JOIN pg_namespace n ON n.oid = cl.relnamespace LEFT JOIN pg_class ref ON ref.oid = c.confrelid
     WHERE n.nspname = $1 AND c.contype IN ('p', 'f')`,
    [schema],
  );
  return tableRows
    .map((t) => t.name)
    .filter((name) => !NOT_COPIED.has(name))
    .sort()
    .map((name) => {
      const keys = keyRows.filter((k) => k.table === name);
      const foreign = keys.filter((k) => k.kind === 'f');
      return {
        columns: columnRows.filter((c) => c.table === name).map(({ name: column, type }) => ({ name: column, type })),
        name,
        primaryKey: keys.find((k) => k.kind === 'p')?.columns ?? [],
        references: [...new Set(foreign.filter((k) => k.references !== name).map((k) => k.references as string))],
        selfReferences: foreign.filter((k) => k.references === name).flatMap((k) => k.columns),
        serial: columnRows.filter((c) => c.table === name && c.serial).map((c) => c.name),
      };
    });
}

/** Referenced tables before the tables that reference them (the schema has no cycles but self-references). */
function orderByReferences(tables: PgTable[]): PgTable[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const ordered: PgTable[] = [];
  const placed = new Set<string>();
  const visit = (table: PgTable, path: string[]) => {
    if (placed.has(table.name)) {
      return;
    }
    if (path.includes(table.name)) {
      throw new StoreCopyError(`the schema's foreign keys form a cycle: ${[...path, table.name].join(' → ')}`);
    }
    for (const name of table.references) {
      const referenced = byName.get(name);
      if (referenced) {
        visit(referenced, [...path, table.name]);
      }
    }
    placed.add(table.name);
    ordered.push(table);
  };
  tables.forEach((t) => visit(t, []));
  return ordered;
}

/** A value read from SQLite as PostgreSQL's column type takes it (SQLite keeps booleans as 0/1). */
function toTarget(value: unknown, type: string): unknown {
  if (value === null || value === undefined) {
    return null;
  }
  if (type === 'boolean') {
    return value === 1 || value === true || value === '1';
  }
  if (typeof value === 'string' && value.includes('\u0000')) {
    // PostgreSQL text cannot hold NUL (see postgres-group-commit.ts): as the write path stores it.
    return value.replace(/\u0000/g, '\uFFFD');
  }
  return value;
}

async function copyTable(from: DataSource, client: Client, table: PgTable): Promise<number> {
  const names = table.columns.map((c) => c.name);
  const page = pageOf(table);
  const perStatement = Math.max(1, Math.min(page, Math.floor(MAX_PARAMETERS / names.length)));
  const late: unknown[][] = [];
  let count = 0;
  // By rowid: every table has one, and it is the order the rows were written in.
  const readPage = (after: number) =>
    from.query<Array<Record<string, unknown>>>(
      `SELECT rowid AS am_copy_rowid, ${names.map((n) => `"${n}"`).join(', ')} FROM "${table.name}" WHERE rowid > ? ORDER BY rowid LIMIT ${page}`,
      [after],
    );
  let next = readPage(Number.MIN_SAFE_INTEGER);
  for (;;) {
    const rows = await next;
    if (rows.length === 0) {
      break;
    }
    // The next page is read (SQLite's thread) while this one is written (PostgreSQL's process):
    // the same pages in the same order, one round trip's wait fewer per page. A read that fails
    // meanwhile is reported when awaited (the no-op catch only keeps it from being unhandled).
    next = rows.length < page ? Promise.resolve([]) : readPage(rows[rows.length - 1].am_copy_rowid as number);
    next.catch(() => undefined);
    for (let start = 0; start < rows.length; start += perStatement) {
      const chunk = rows.slice(start, start + perStatement);
      const values: unknown[] = [];
      const tuples = chunk.map((row) => {
        const placeholders = table.columns.map((column) => {
          const selfReference = table.selfReferences.includes(column.name);
          values.push(selfReference ? null : toTarget(row[column.name], column.type));
          return `$${values.length}`;
        });
        if (table.selfReferences.some((c) => row[c] !== null)) {
          late.push([...table.primaryKey.map((k) => row[k]), ...table.selfReferences.map((c) => row[c])]);
        }
        return `(${placeholders.join(', ')})`;
      });
      await client.query(`INSERT INTO ${table.name} (${names.join(', ')}) VALUES ${tuples.join(', ')}`, values);
    }
    count += rows.length;
  }
  // A row may reference one copied after it (a parent written later): set once all are in.
  for (const row of late) {
    const keys = table.primaryKey.map((k, i) => `${k} = $${i + 1}`);
    const sets = table.selfReferences.map((c, i) => `${c} = $${table.primaryKey.length + i + 1}`);
    await client.query(`UPDATE ${table.name} SET ${sets.join(', ')} WHERE ${keys.join(' AND ')}`, row);
  }
  return count;
}

/** One row as both stores must agree on it: booleans as booleans, numbers as numbers, NUL as stored. */
function rowDigest(row: Record<string, unknown>, columns: PgColumn[]): bigint {
  const normal = columns.map((c) => {
    const value = toTarget(row[c.name], c.type);
    if (Buffer.isBuffer(value)) {
      return createHash('sha256').update(value).digest('hex'); // bytes: the same from SQLite's blob and PostgreSQL's bytea
    }
    return typeof value === 'bigint' ? Number(value) : value;
  });
  return BigInt(`0x${createHash('sha256').update(JSON.stringify(normal)).digest('hex').slice(0, 16)}`);
}

/**
 * Every table read back from both sides: the same row count, and the same rows (an
 * order-independent sum of row hashes, so the stores' different collations do not matter).
 */
async function verify(from: DataSource, client: Client, tables: PgTable[]): Promise<void> {
  const MOD = 1n << 64n;
  for (const table of tables) {
    const names = table.columns.map((c) => c.name);
    const page = pageOf(table);
    const readSource = async (): Promise<{ sum: bigint; count: number }> => {
      let sum = 0n;
      let count = 0;
      let after = Number.MIN_SAFE_INTEGER;
      for (;;) {
        const rows = await from.query<Array<Record<string, unknown>>>(
          `SELECT rowid AS am_copy_rowid, ${names.map((n) => `"${n}"`).join(', ')} FROM "${table.name}" WHERE rowid > ? ORDER BY rowid LIMIT ${page}`,
          [after],
        );
        if (rows.length === 0) {
          return { count, sum };
        }
        after = rows[rows.length - 1].am_copy_rowid as number;
        for (const row of rows) {
          sum = (sum + rowDigest(row, table.columns)) % MOD;
        }
        count += rows.length;
      }
    };
    const readTarget = async (): Promise<{ sum: bigint; count: number }> => {
      let sum = 0n;
      let count = 0;
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        await client.query(`DECLARE am_copy_verify NO SCROLL CURSOR FOR SELECT ${names.join(', ')} FROM ${table.name}`);
        for (;;) {
          const { rows } = await client.query<Record<string, unknown>>(`FETCH ${page} FROM am_copy_verify`);
          if (rows.length === 0) {
            return { count, sum };
          }
          for (const row of rows) {
            sum = (sum + rowDigest(row, table.columns)) % MOD;
          }
          count += rows.length;
        }
      } finally {
        await client.query('COMMIT');
      }
    };
    // Both sides read at once (each store waits on its own I/O while the other's rows are hashed).
    const [source, target] = await Promise.allSettled([readSource(), readTarget()]);
    if (source.status === 'rejected' || target.status === 'rejected') {
      throw source.status === 'rejected' ? source.reason : (target as PromiseRejectedResult).reason;
    }
    const { count: sourceCount, sum: sourceSum } = source.value;
    const { count: targetCount, sum: targetSum } = target.value;
    if (sourceCount !== targetCount || sourceSum !== targetSum) {
      throw new StoreCopyError(
        `the copy of ${table.name} differs from its source (${sourceCount} rows there, ${targetCount} here${sourceCount === targetCount ? ', different content' : ''}); the target schema keeps the copy for inspection`,
      );
    }
  }
}
