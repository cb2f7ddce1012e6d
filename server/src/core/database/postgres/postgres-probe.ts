import { Client } from 'pg';

import { type PostgresStore, pgClientConfig } from '../store';

export interface PostgresProbe {
  version: string;
  /** The user may create schemas in this database (a workspace's first start creates its own). */
  canCreate: boolean;
  /** The workspace's schema exists already. */
  hasSchema: boolean;
  /** A manager holds the workspace's advisory lock (see PostgresWorkspaceLock). */
  held: boolean;
}

/**
 * What `doctor` asks a PostgreSQL server for a workspace: one connection, one catalog query, no
 * table of the workspace read. Throws what node-postgres throws (refused, login failed, …).
 */
export async function probePostgres(store: PostgresStore, timeoutMs: number): Promise<PostgresProbe> {
  const client = new Client({ ...pgClientConfig(store, 'agent-manager doctor'), connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string; can_create: boolean; has_schema: boolean; held: boolean }>(
      `SELECT current_setting('server_version') AS version,
              has_database_privilege(current_user, current_database(), 'CREATE') AS can_create,
              EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS has_schema,
              EXISTS (SELECT 1 FROM pg_locks, hashtextextended($1, 0) AS key
                      WHERE locktype = 'advisory' AND granted AND objsubid = 1
                        AND classid = ((key >> 32) & 4294967295)::oid AND objid = (key & 4294967295)::oid) AS held`,
      [store.schema],
    );
    const row = rows[0];
    return { canCreate: row.can_create, hasSchema: row.has_schema, held: row.held, version: row.version };
  } finally {
    await client.end().catch(() => undefined);
  }
}
