import type { Person } from '@libs/contracts';

import type { Clock } from './clock';
import type { Serving } from './http/serving';
import type { ConfigurationService } from './configuration/configuration.service';
import type { PostgresBoard } from './database/postgres/postgres-board';
import type { Store } from './database/store';
import type { FileLogger } from './logging/file-logger';
import type { WorkspacePaths } from './workspace/workspace';

/** Injection token for what the launcher resolved before Nest started. */
export const RUNTIME = Symbol('RUNTIME');

/** Facts fixed for the life of the process: where things are and what runs. */
export interface Runtime {
  paths: WorkspacePaths;
  configuration: ConfigurationService;
  logger: FileLogger;
  /** What the banner and GET /api/workspace show: the SQLite file, or the PostgreSQL URL (no password) and schema. */
  databasePath: string;
  store: Store;
  logFilePath: string;
  version: string;
  /** Who every request with the owner's credentials acts as, resolved once at start. */
  person: Person;
  /** Team mode: this manager's membership of its board (runner id, heartbeat, leadership); absent otherwise. */
  board?: PostgresBoard;
  /** Replaces the system clock (tests that move time). */
  clock?: Clock;
  /** TLS or not, and the certificate's names. */
  serving: Serving;
  /**
   * The environment the manager was started with (its process's, unless `startManager` was given
   * another): what agents inherit from and where the forges' tokens are read. Absent: the process's.
   */
  env?: NodeJS.ProcessEnv;
}
