import * as path from 'node:path';

import { boardSchema, runnerIdOf } from '../board/board-name';
import type { ConfigurationService } from '../configuration/configuration.service';
import type { WorkspacePaths } from '../workspace/workspace';

/** Where a workspace's store lives: a SQLite file (the default), or a schema on a PostgreSQL server. */
export type Store = SqliteStore | PostgresStore;

export interface SqliteStore {
  kind: 'sqlite';
  path: string;
}

export interface PostgresStore {
  kind: 'postgres';
  /** The URL as configured (with its password: never shown, see redactDatabaseUrl). */
  url: string;
  /** `am_<workspace key>`: one schema per workspace, so one server holds many workspaces; `am_board_<hash>` for a board. */
  schema: string;
  /** Team mode: the board this manager is a runner of (its schema is the board's), or null. */
  board: { name: string; runnerId: string } | null;
  /** Read pool size (the writer and the lock each hold one more connection). */
  poolSize: number;
  /** 0: no limit. */
  statementTimeoutMs: number;
  tls: 'url' | 'require' | 'verify';
}

/** The schema of a workspace on PostgreSQL: its data directory's key (hex), so a valid identifier. */
export function schemaFor(paths: Pick<WorkspacePaths, 'dataDirectory'>): string {
  const key = paths.dataDirectory.split(/[\\/]/).pop() ?? '';
  if (!/^[0-9a-f]{16}$/.test(key)) {
    throw new Error(`unexpected workspace key ${key}`);
  }
  return `am_${key}`;
}

/**
 * The store the configuration names: PostgreSQL when `databaseUrl` is set, else the SQLite file.
 * `boardName` (resolved from the `board` setting, see resolveBoardName) puts it in the board's schema.
 */
export function storeOf(
  configuration: ConfigurationService,
  paths: WorkspacePaths,
  sqlitePath: string,
  boardName: string | null = null,
): Store {
  const url = configuration.get('databaseUrl');
  if (!url) {
    if (configuration.get('board') !== null) {
      throw new Error(
        'a board lives on PostgreSQL: --board needs --db postgres://… (or databaseUrl, CODE_FACTORY_DATABASE_URL)',
      );
    }
    return { kind: 'sqlite', path: sqlitePath };
  }
  const board =
    boardName === null ? null : { name: boardName, runnerId: runnerIdOf(path.basename(paths.dataDirectory)) };
  return {
    board,
    kind: 'postgres',
    poolSize: configuration.get('databasePoolSize'),
    schema: boardName === null ? schemaFor(paths) : boardSchema(boardName),
    statementTimeoutMs: configuration.get('databaseStatementTimeoutSeconds') * 1000,
    tls: configuration.get('databaseTls'),
    url,
  };
}

/** `postgres://user:secret@host/db` → `postgres://user@host/db`: for banners, logs and the API. */
export function redactDatabaseUrl(url: string | null): string | null {
  if (url === null) {
    return null;
  }
  try {
    const parsed = new URL(url);
    parsed.password = '';
    for (const key of [...parsed.searchParams.keys()]) {
      if (/pass|secret|key/i.test(key)) {
        parsed.searchParams.set(key, '***');
      }
    }
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** What the banner and GET /api/workspace show as the database. */
export function describeStore(store: Store): string {
  if (store.kind === 'sqlite') {
    return store.path;
  }
  return `${redactDatabaseUrl(store.url) ?? ''} (${store.board ? `board ${store.board.name}, ` : ''}schema ${store.schema})`;
}

/** node-postgres connection options for a store: TLS, statement timeout, and the workspace schema first on the search path. */
export function pgClientConfig(store: PostgresStore, applicationName: string): import('pg').ClientConfig {
  const ssl =
    store.tls === 'url'
      ? undefined
      : store.tls === 'require'
        ? { rejectUnauthorized: false }
        : { rejectUnauthorized: true };
  return {
    application_name: applicationName,
    connectionString: store.url,
    connectionTimeoutMillis: 10_000,
    // Unqualified names (every statement the write path stages) resolve in the workspace's schema.
    options: `-c search_path=${store.schema}`,
    ...(ssl ? { ssl } : {}),
    ...(store.statementTimeoutMs > 0 ? { statement_timeout: store.statementTimeoutMs } : {}),
  };
}
