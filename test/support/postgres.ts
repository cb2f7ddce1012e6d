import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { Client, types } from 'pg';

// COUNT(*) is bigint: read it as a number, as from SQLite.
types.setTypeParser(20, (value) => Number(value));

/** The workspace schema of a data directory (`…/workspaces/<key>`), or of a path inside it. */
export function schemaOf(pathInDataDirectory: string): string {
  const key = [pathInDataDirectory, path.dirname(pathInDataDirectory)]
    .map((p) => path.basename(p))
    .find((name) => /^[0-9a-f]{16}$/.test(name));
  if (!key) {
    throw new Error(`no workspace key in ${pathInDataDirectory}`);
  }
  return `am_${key}`;
}

/** One statement on a named schema (`$n` placeholders): a team-mode board's, for instance. */
export async function schemaQuery<T>(schema: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: process.env.TEST_DATABASE_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** One statement on a workspace's schema (`?` placeholders, as the SQLite helpers take). */
export async function pgQuery<T>(pathInDataDirectory: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({
    connectionString: process.env.TEST_DATABASE_URL,
    options: `-c search_path=${schemaOf(pathInDataDirectory)}`,
  });
  await client.connect();
  try {
    let n = 0;
    const { rows } = await client.query<T>(
      sql.replace(/\?/g, () => `$${++n}`),
      params,
    );
    return rows;
  } finally {
    await client.end();
  }
}

/** Drops the schemas of the workspaces under a test home (their managers have stopped): run synchronously from a cleanup. */
export function dropSchemasSync(schemas: string[]): void {
  if (!process.env.TEST_DATABASE_URL || schemas.length === 0) {
    return;
  }
  const script = `const { Client } = require('pg'); (async () => { const c = new Client({ connectionString: process.env.TEST_DATABASE_URL }); await c.connect();
    for (const s of ${JSON.stringify(schemas)}) { await c.query('DROP SCHEMA IF EXISTS ' + s + ' CASCADE'); } await c.end(); })().catch((e) => { console.error(e.message); process.exit(1); });`;
  spawnSync(process.execPath, ['-e', script], {
    cwd: path.resolve(__dirname, '../..'),
    env: process.env,
    stdio: 'ignore',
    timeout: 30_000,
  });
}

/** Several read queries in one REPEATABLE READ transaction (one consistent snapshot of a live schema). */
export async function pgSnapshot(
  pathInDataDirectory: string,
  queries: Record<string, string>,
): Promise<Record<string, Array<Record<string, unknown>>>> {
  const client = new Client({
    connectionString: process.env.TEST_DATABASE_URL,
    options: `-c search_path=${schemaOf(pathInDataDirectory)}`,
  });
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const out: Record<string, Array<Record<string, unknown>>> = {};
    for (const [name, sql] of Object.entries(queries)) {
      try {
        out[name] = (await client.query<Record<string, unknown>>(sql)).rows;
      } catch (err) {
        throw new Error(`${name}: ${(err as Error).message}`);
      }
    }
    await client.query('COMMIT');
    return out;
  } finally {
    await client.end();
  }
}
