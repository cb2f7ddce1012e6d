import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';

import type { AgentIsolation, ConfigurationValues } from '@libs/contracts';

import { AgentSandbox } from './agents/agent-sandbox';
import { killDescendantsNow } from './agents/process-tree';
import { spawner } from './core/process/spawner';
import { AppModule } from './app.module';
import { loginUrl } from './auth/local-token';
import { ServingOptions, isWildcardHost, planServing } from './core/http/serving';
import { LocalTokenService } from './auth/local-token.service';
import { AgentEnvironmentService } from './agents/agent-environment.service';
import { ConfigurationService, overridesFromEnv } from './core/configuration/configuration.service';
import { configureHttp, createExpressInstance } from './configure-http';
import { guardConnections } from './core/http/connection-guard';
import type { Clock } from './core/clock';
import { FileLogger } from './core/logging/file-logger';
import { packageVersion } from './core/package-info';
import type { Runtime } from './core/runtime';
import { PostgresBoard } from './core/database/postgres/postgres-board';
import { PostgresWorkspaceLock } from './core/database/postgres/postgres-workspace-lock';
import { resolveBoardName } from './core/board/board-name';
import { describeStore, storeOf } from './core/database/store';
import { InstanceLock } from './core/workspace/instance-lock';
import { workspaceGitState } from './core/git/git';
import { resolvePerson } from './core/person';
import { codeFactoryHome, resolveWorkspace } from './core/workspace/workspace';

export interface StartOptions {
  /** The repository to bind; its realpath is the workspace. */
  workspace: string;
  /** Configuration file instead of `<data dir>/config.json`. */
  configPath?: string;
  /** Launch overrides (flags); they beat the environment, which beats the file. */
  overrides?: Partial<ConfigurationValues>;
  env?: NodeJS.ProcessEnv;
  /** Replaces the system clock: tests that move time (timers, retention). */
  clock?: Clock;
  /** TLS (or plain HTTP chosen explicitly) for serving beyond loopback. */
  serving?: ServingOptions;
}

export interface RunningManager {
  url: string;
  /** `<url>/?token=…`: opens the dashboard and sets its login cookie. */
  loginUrl: string;
  authenticationEnabled: boolean;
  /** Whether agents run in the sandbox that hides the workspaces' data (the banner warns if not). */
  agentIsolation: AgentIsolation;
  /**
   * What the workspace is to git at start: anything but `repository` means agents work in place,
   * directly in the person's folder, which the banner and the log say loudly.
   */
  workspaceGit: 'repository' | 'no_commit' | 'not_git';
  runtime: Runtime;
  app: INestApplication;
  /** Graceful stop: ends agent runs, closes SSE streams, finishes queued writes, releases the lock. */
  stop(): Promise<void>;
  /**
   * The forced exit (a second Ctrl+C during a stop): kills every agent process at once and
   * releases the lock, synchronously; the caller exits next. Runs still recorded as running are
   * settled by the next start's reconciliation, as after a crash.
   */
  forceStop(): void;
}

function urlHost(host: string): string {
  if (isWildcardHost(host)) {
    return '127.0.0.1';
  }
  return host.includes(':') ? `[${host}]` : host;
}

/** Paths in the configuration file are relative to the data directory. */
function resolveIn(base: string, value: string | null, fallback: string): string {
  return value ? path.resolve(base, value) : fallback;
}

/** Why agents will not get worktrees here: one line for the banner and the log. */
export function workspaceGitWarning(state: 'no_commit' | 'not_git', root: string): string {
  return state === 'not_git'
    ? `${root} is not a git repository: agents will work in place, directly in this folder (no worktree, no branch of their own)`
    : `${root} is a git repository without any commit: agents will work in place, directly in your checkout (no worktree, no branch of their own), until it has one`;
}

/** How to give Requirements their own worktrees; those created afterwards get them, without a restart. */
export function workspaceGitFix(state: 'no_commit' | 'not_git'): string {
  return state === 'not_git'
    ? 'git init && git add -A && git commit -m "Initial commit"'
    : 'make a first commit: git add -A && git commit -m "Initial commit"';
}

/** Binds the workspace, takes its lock, opens the database and starts listening. */
export async function startManager(options: StartOptions): Promise<RunningManager> {
  const env = options.env ?? process.env;
  const paths = resolveWorkspace(options.workspace, codeFactoryHome(env));
  const configuration = new ConfigurationService(options.configPath ?? paths.defaultConfigPath, {
    ...overridesFromEnv(env),
    ...options.overrides,
  });
  // Refused before the lock: a start that cannot serve safely leaves nothing behind.
  const plan = planServing(configuration.get('host'), {
    ...options.serving,
    authentication: configuration.get('authentication'),
  });
  const lock = new InstanceLock(paths.lockPath, paths.root);
  lock.acquire();

  let logger: FileLogger | undefined;
  let app: INestApplication | undefined;
  let storeLock: PostgresWorkspaceLock | undefined;
  let board: PostgresBoard | undefined;
  try {
    const boardSetting = configuration.get('board');
    const boardName =
      boardSetting === null || !configuration.get('databaseUrl')
        ? null
        : (await resolveBoardName(boardSetting, paths.root, paths.dataDirectory)).name;
    const store = storeOf(
      configuration,
      paths,
      resolveIn(paths.dataDirectory, configuration.get('databasePath'), paths.defaultDatabasePath),
      boardName,
    );
    const databasePath = describeStore(store);
    const logFilePath = resolveIn(paths.dataDirectory, configuration.get('logFilePath'), paths.defaultLogFilePath);
    logger = new FileLogger({
      filePath: logFilePath,
      level: configuration.get('logLevel'),
      maxFiles: configuration.get('logMaxFiles'),
      maxSize: configuration.get('logMaxSize'),
    });
    const fileLogger = logger;
    configuration.changes$.subscribe((snapshot) => fileLogger.setLevel(snapshot.effective.logLevel));
    const person = await resolvePerson(configuration, paths.root, env);
    logger.log({ msg: 'acting for', person: person.name, personId: person.id, source: person.source }, 'Manager');
    const lockLogger = logger;
    if (store.kind === 'postgres' && store.board) {
      // Team mode: one of the board's runners; the start lock serialises runners' schema setup and migrations.
      board = new PostgresBoard({ ...store, board: store.board }, person, (err) =>
        lockLogger.error(`the board's PostgreSQL session failed: ${err.message}`, 'Manager'),
      );
      await board.join();
      logger.log(
        { board: store.board.name, msg: 'joined the board', runnerId: store.board.runnerId, schema: store.schema },
        'Manager',
      );
    } else if (store.kind === 'postgres') {
      // One writer per workspace across machines: refused here, before anything opens the schema.
      storeLock = new PostgresWorkspaceLock(store, (err) =>
        lockLogger.error(`the PostgreSQL workspace lock's session failed: ${err.message}`, 'Manager'),
      );
      await storeLock.acquire();
    }
    const runtime: Runtime = {
      board,
      clock: options.clock,
      configuration,
      databasePath,
      env,
      logFilePath,
      logger,
      paths,
      person,
      serving: plan.serving,
      store,
      version: packageVersion(),
    };

    app = await NestFactory.create(AppModule.forRoot(runtime), new ExpressAdapter(createExpressInstance()), {
      abortOnError: false,
      bodyParser: false,
      httpsOptions: plan.httpsOptions,
      logger,
    });
    configureHttp(app);
    guardConnections(app.getHttpServer());
    await app.listen(configuration.get('port'), configuration.get('host'));
    const address = app.getHttpServer().address() as AddressInfo;
    // TLS on every interface: the certificate's name is the one a client can verify.
    const wildcard = ['0.0.0.0', '::'].includes(configuration.get('host'));
    const urlName =
      wildcard && plan.serving.certificateNames[0]
        ? plan.serving.certificateNames[0]
        : urlHost(configuration.get('host'));
    const url = `${plan.serving.scheme}://${urlName}:${address.port}`;
    lock.setUrl(url);
    await storeLock?.setUrl(url);
    await board?.opened(url);
    app.get(AgentEnvironmentService).setApiUrl(`${url}/api`);
    const tokens = app.get(LocalTokenService);
    logger.log({ msg: 'agent manager started', pid: process.pid, url, workspace: paths.root }, 'Manager');
    const workspaceGit = await workspaceGitState(paths.root);
    if (workspaceGit !== 'repository') {
      logger.warn(
        { fix: workspaceGitFix(workspaceGit), msg: workspaceGitWarning(workspaceGit, paths.root), workspaceGit },
        'Manager',
      );
    }

    const running = app;
    let stopping: Promise<void> | undefined;
    return {
      agentIsolation: app.get(AgentSandbox).status,
      app: running,
      authenticationEnabled: tokens.enabled,
      workspaceGit,
      forceStop: () => {
        fileLogger.log({ msg: 'agent manager forced to stop' }, 'Manager');
        killDescendantsNow();
        lock.release();
        void storeLock?.release(); // the process exits next, which ends the session and its lock anyway
        void board?.leave();
      },
      loginUrl: loginUrl(url, tokens.value),
      runtime,
      stop: () =>
        (stopping ??= (async () => {
          fileLogger.log({ msg: 'agent manager stopping' }, 'Manager');
          // Requests in flight when the stop began leave keep-alive sockets behind as they
          // finish; close those as they go idle instead of waiting out their keep-alive timeout.
          const server = running.getHttpServer() as import('node:http').Server;
          const sweep = setInterval(() => server.closeIdleConnections(), 50);
          try {
            await running.close();
          } finally {
            clearInterval(sweep);
            await storeLock?.release();
            await board?.leave();
            lock.release();
            spawner.release();
            fileLogger.log({ msg: 'agent manager stopped' }, 'Manager');
            await fileLogger.close();
          }
        })()),
      url,
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await storeLock?.release();
    await board?.leave();
    lock.release();
    logger?.error(err instanceof Error ? err : String(err), 'Manager');
    await logger?.close();
    throw err;
  }
}
