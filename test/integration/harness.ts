import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import * as sqlite3 from 'sqlite3';

import type { ConfigurationValues } from '@libs/contracts';

import { AppModule } from '@server/app.module';
import type { Clock } from '@server/core/clock';
import { PLAIN_HTTP } from '@server/core/http/serving';
import { ConfigurationService } from '@server/core/configuration/configuration.service';
import { DomainError } from '@server/core/errors/domain-error';
import { PostgresWorkspaceLock } from '@server/core/database/postgres/postgres-workspace-lock';
import { schemaFor, storeOf } from '@server/core/database/store';
import { FileLogger } from '@server/core/logging/file-logger';
import type { Runtime } from '@server/core/runtime';
import { resolveWorkspace } from '@server/core/workspace/workspace';

import { dropSchemasSync, pgQuery } from '../support/postgres';

/** Unless a test says otherwise, runs use the silent synthetic agent (it waits until ended). */
export const IDLE_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'idle-agent.js');

export type StoreKind = 'sqlite' | 'postgres';

/**
 * The stores the integration specs run on: the SQLite file always; PostgreSQL when TEST_DATABASE_URL
 * names a server (`npm run test:postgres` starts a throwaway one and runs these specs there too),
 * else its describe block is skipped, as the end-to-end suites of the other store are.
 */
export const STORES: readonly StoreKind[] = ['sqlite', 'postgres'];

export function storeAvailable(kind: StoreKind): boolean {
  return kind === 'sqlite' || Boolean(process.env.TEST_DATABASE_URL);
}

/**
 * One describe block per store (`title (sqlite)`, `title (postgres)`), the unavailable ones
 * skipped, and so are the stores not in `only` (a spec not yet reliable on one of them says why).
 */
export function describeStores(
  title: string,
  body: (kind: StoreKind) => void,
  only: readonly StoreKind[] = STORES,
): void {
  for (const kind of STORES) {
    (storeAvailable(kind) && only.includes(kind) ? describe : describe.skip)(`${title} (${kind})`, () => body(kind));
  }
}

export interface Workspace {
  kind: StoreKind;
  home: string;
  root: string;
  databasePath: string;
  cleanup(): void;
}

/**
 * A temporary Agent Manager home and workspace directory: a real SQLite file lives there, or, on
 * PostgreSQL, the workspace's schema (dropped by `cleanup`).
 */
export function makeWorkspace(kind: StoreKind = 'sqlite'): Workspace {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-int-'));
  const home = path.join(base, 'home');
  const root = path.join(base, 'repo');
  fs.mkdirSync(root, { recursive: true });
  const paths = resolveWorkspace(root, home);
  return {
    cleanup: () => {
      if (kind === 'postgres') {
        dropSchemasSync([schemaFor(paths)]);
      }
      fs.rmSync(base, { force: true, recursive: true });
    },
    databasePath: paths.defaultDatabasePath,
    home,
    kind,
    root,
  };
}

export interface OpenOptions {
  /** Replaces the system clock (test/support/fake-clock.ts moves it). */
  clock?: Clock;
}

/**
 * The application's services and repositories on the workspace's store, with no HTTP server: the
 * integration tier calls services directly, beside the end-to-end suites that go through the
 * API. Migrations run at start as in production; on PostgreSQL the workspace lock is taken first,
 * as the manager does (it creates the schema), and released at close.
 */
export async function openServices(
  workspace: Workspace,
  overrides: Partial<ConfigurationValues> = {},
  { clock }: OpenOptions = {},
): Promise<INestApplicationContext> {
  const paths = resolveWorkspace(workspace.root, workspace.home);
  const configuration = new ConfigurationService(paths.defaultConfigPath, {
    claudeExecutable: IDLE_AGENT,
    codexExecutable: IDLE_AGENT,
    pullRequestReconcileIntervalSeconds: 0,
    ...(workspace.kind === 'postgres' ? { databaseUrl: process.env.TEST_DATABASE_URL } : {}),
    ...overrides,
  });
  const store = storeOf(configuration, paths, paths.defaultDatabasePath);
  if (store.kind !== workspace.kind) {
    throw new Error(`the workspace is on ${workspace.kind} but the configuration names ${store.kind}`);
  }
  const lock = store.kind === 'postgres' ? new PostgresWorkspaceLock(store) : undefined;
  await lock?.acquire();
  const logger = new FileLogger({ filePath: paths.defaultLogFilePath, level: 'warn', maxFiles: '2', maxSize: '5m' });
  const runtime: Runtime = {
    clock,
    configuration,
    databasePath: paths.defaultDatabasePath,
    store,
    logFilePath: paths.defaultLogFilePath,
    logger,
    paths,
    serving: PLAIN_HTTP,
    person: {
      email: 'integration@example.com',
      id: 'person_integration',
      name: 'Integration Test',
      source: 'configuration',
    },
    version: 'test',
  };
  let context: INestApplicationContext;
  try {
    context = await NestFactory.createApplicationContext(AppModule.forRoot(runtime), { abortOnError: false, logger });
  } catch (err) {
    await lock?.release();
    await logger.close();
    throw err;
  }
  const close = context.close.bind(context);
  context.close = async () => {
    try {
      await close();
    } finally {
      await lock?.release();
      await logger.close();
    }
  };
  return context;
}

/**
 * A read of the store through a connection of its own (what a reader sees: committed rows), with
 * `?` placeholders on either store. SQL that differs between them is the caller's to choose.
 */
export function rows<T = Record<string, unknown>>(
  workspace: Workspace,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  if (workspace.kind === 'postgres') {
    return pgQuery<T>(workspace.databasePath, sql, params);
  }
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(workspace.databasePath, sqlite3.OPEN_READONLY, (err) => {
      if (err) {
        reject(err);
        return;
      }
      db.all(sql, params, (error, result) => {
        db.close();
        if (error) {
          reject(error);
        } else {
          resolve(result as T[]);
        }
      });
    });
  });
}

/** What a service refused with (its DomainError's kind and code); fails when it did not refuse. */
export async function refusal(promise: Promise<unknown>): Promise<{ kind: string; code: string }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof DomainError) {
      return { code: err.code, kind: err.kind };
    }
    throw err;
  }
  throw new Error('expected a refusal, but the call succeeded');
}

/**
 * The event types the services stored for a Requirement, oldest first. Needs you's items are left
 * out: a reaction writes them after the commit that caused them, at its own pace.
 */
export async function eventTypes(workspace: Workspace, requirementId: string): Promise<string[]> {
  return (
    await rows<{ type: string }>(
      workspace,
      "SELECT type FROM manager_event WHERE requirement_id = ? AND type NOT IN ('attention.opened', 'attention.cleared') ORDER BY id",
      [requirementId],
    )
  ).map((e) => e.type);
}
