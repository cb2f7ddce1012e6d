import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import type { ConfigurationValues } from '@libs/contracts';

import { AppModule } from '@server/app.module';
import { ConfigurationService } from '@server/core/configuration/configuration.service';
import { FileLogger } from '@server/core/logging/file-logger';
import type { Runtime } from '@server/core/runtime';
import { resolveWorkspace } from '@server/core/workspace/workspace';

import { query } from '../support/db-snapshot';

/** Unless a test says otherwise, runs use the silent synthetic agent (it waits until ended). */
export const IDLE_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'idle-agent.js');

export interface Workspace {
  home: string;
  root: string;
  databasePath: string;
  cleanup(): void;
}

/** A temporary Agent Manager home and workspace directory (a real SQLite file lives there). */
export function makeWorkspace(): Workspace {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-int-'));
  const home = path.join(base, 'home');
  const root = path.join(base, 'repo');
  fs.mkdirSync(root, { recursive: true });
  const paths = resolveWorkspace(root, home);
  return { cleanup: () => fs.rmSync(base, { force: true, recursive: true }), databasePath: paths.defaultDatabasePath, home, root };
}

/**
 * The application's services and repositories on the workspace's SQLite file, with no HTTP
 * server: the integration tier calls services directly, beside the end-to-end suites that go
 * through the API. Migrations run at start as in production.
 */
export async function openServices(workspace: Workspace, overrides: Partial<ConfigurationValues> = {}): Promise<INestApplicationContext> {
  const paths = resolveWorkspace(workspace.root, workspace.home);
  const configuration = new ConfigurationService(paths.defaultConfigPath, {
    claudeExecutable: IDLE_AGENT,
    codexExecutable: IDLE_AGENT,
    pullRequestReconcileIntervalSeconds: 0,
    ...overrides,
  });
  const logger = new FileLogger({ filePath: paths.defaultLogFilePath, level: 'warn', maxFiles: '2', maxSize: '5m' });
  const runtime: Runtime = {
    configuration,
    databasePath: paths.defaultDatabasePath,
    store: { kind: 'sqlite', path: paths.defaultDatabasePath },
    logFilePath: paths.defaultLogFilePath,
    logger,
    paths,
    version: 'test',
  };
  const context = await NestFactory.createApplicationContext(AppModule.forRoot(runtime), { abortOnError: false, logger });
  const close = context.close.bind(context);
  context.close = async () => {
    await close();
    await logger.close();
  };
  return context;
}

/** A read of the file through a connection of its own (what a reader sees: committed rows). */
export function rows<T = Record<string, unknown>>(workspace: Workspace, sql: string, params: unknown[] = []): Promise<T[]> {
  return query<T>(workspace.databasePath, sql, params);
}
