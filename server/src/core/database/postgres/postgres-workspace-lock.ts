import * as os from 'node:os';

import { Client } from 'pg';

import { type PostgresStore, pgClientConfig, redactDatabaseUrl } from '../store';

/** Who holds a workspace on PostgreSQL (the `am_writer` row the holder writes). */
export interface PostgresHolder {
  host: string;
  pid: number;
  url: string | null;
  startedAt: string;
}

export class PostgresWorkspaceLockedError extends Error {
  constructor(
    readonly holder: PostgresHolder | undefined,
    store: PostgresStore,
  ) {
    super(
      holder
        ? `Agent Manager is already running for this workspace on ${redactDatabaseUrl(store.url)} (schema ${store.schema}): host ${holder.host}, pid ${holder.pid}, ${holder.url ?? 'still starting'}`
        : `Agent Manager is already running for this workspace on ${redactDatabaseUrl(store.url)} (schema ${store.schema}), holder unknown`,
    );
  }
}

/**
 * The single-writer rule across machines (docs/architecture.md#the-store): the local lock file only sees this
 * machine, so on PostgreSQL a manager also holds a session-level advisory lock keyed by its
 * workspace schema, on a connection of its own, for as long as it runs. The lock ends with the
 * session, so a killed manager (or a lost machine, once the server notices the dead connection)
 * frees it without anyone's help. The holder records its host, pid and URL in `am_writer`,
 * which a refused manager reads to say who holds it.
 *
 * Starting also creates the schema (first start of a workspace on this server) and `am_writer`,
 * whose `last_event_id` is the event ids' high-water mark (see PostgresGroupCommit).
 */
export class PostgresWorkspaceLock {
  private client: Client | undefined;

  constructor(
    private readonly store: PostgresStore,
    private readonly onLost: (err: Error) => void = () => undefined,
  ) {}

  async acquire(): Promise<void> {
    const client = new Client(pgClientConfig(this.store, 'agent-manager lock'));
    await client.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [this.store.schema],
      );
      if (!rows[0]?.locked) {
        throw new PostgresWorkspaceLockedError(await holderOf(client, this.store.schema), this.store);
      }
      // Only the lock holder creates: two first starts cannot race on CREATE SCHEMA.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.store.schema}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.store.schema}.am_writer (
          id integer PRIMARY KEY CHECK (id = 1),
          host varchar NOT NULL,
          pid integer NOT NULL,
          url varchar,
          started_at varchar NOT NULL,
          last_event_id bigint NOT NULL DEFAULT 0
        )`,
      );
      await client.query(
        `INSERT INTO ${this.store.schema}.am_writer (id, host, pid, url, started_at) VALUES (1, $1, $2, NULL, $3)
         ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, url = NULL, started_at = EXCLUDED.started_at`,
        [os.hostname(), process.pid, new Date().toISOString()],
      );
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    client.on('error', (err) => this.onLost(err));
    this.client = client;
  }

  /** Once listening: the URL a refused manager names. */
  async setUrl(url: string): Promise<void> {
    await this.client?.query(`UPDATE ${this.store.schema}.am_writer SET url = $1 WHERE id = 1`, [url]);
  }

  /** Ends the session, and with it the advisory lock. */
  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      await client.query(`UPDATE ${this.store.schema}.am_writer SET url = NULL WHERE id = 1`).catch(() => undefined);
      await client.end().catch(() => undefined);
    }
  }
}

async function holderOf(client: Client, schema: string): Promise<PostgresHolder | undefined> {
  try {
    const { rows } = await client.query<{ host: string; pid: number; url: string | null; started_at: string }>(
      `SELECT host, pid, url, started_at FROM ${schema}.am_writer WHERE id = 1`,
    );
    const row = rows[0];
    return row ? { host: row.host, pid: row.pid, startedAt: row.started_at, url: row.url } : undefined;
  } catch {
    return undefined; // the holder has not created it yet
  }
}
