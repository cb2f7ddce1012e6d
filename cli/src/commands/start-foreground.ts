import * as path from 'node:path';

import { ConfigurationValues, LogLevel } from '@libs/contracts';

import { ConfigurationFileError } from '@server/core/configuration/configuration.service';
import { ServingRefused } from '@server/core/http/serving';
import { describePortInUse } from '@server/core/port-holder';
import { PostgresWorkspaceLockedError } from '@server/core/database/postgres/postgres-workspace-lock';
import { InstanceLockedError } from '@server/core/workspace/instance-lock';
import { codeFactoryHome } from '@server/core/workspace/workspace';
import { RunningManager, startManager, workspaceGitFix, workspaceGitWarning } from '@server/manager';

import { UsageError } from '../options';
import { readDatabaseUrlFile } from '../secret-arguments';
import { StopSignals } from './stop-signals';

// `agent-manager start` in the foreground: the one command that loads the whole server. Its own
// module, imported when that command runs, so `status`, `stop`, `start --detach` and `--help`
// start in a fraction of the time.

export interface StartFlags {
  workspace?: string;
  host?: string;
  port?: number;
  db?: string;
  dbFile?: string;
  config?: string;
  logLevel?: LogLevel;
  logFile?: string;
  allowOrigin?: string;
  prReconcileInterval?: number;
  personName?: string;
  personEmail?: string;
  /** `true` when `--board` came without a name (commander does not call the parser then): the origin's board. */
  board?: string | true;
  stopWithParent?: boolean;
  detach?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  insecureHttp?: boolean;
}

/**
 * The Dashboard line. The login link carries the token, so it is printed only to a terminal,
 * where a person reads it: any other destination of this output is a log (the supervisor's
 * daemon.log, a service's journal, `| tee`), and logs never hold the token.
 */
function dashboardLine(manager: RunningManager, terminal: boolean): string {
  if (!manager.authenticationEnabled) {
    return `${manager.url}/`;
  }
  return terminal ? manager.loginUrl : `${manager.url}/ (\`agent-manager token\` prints the login link)`;
}

function banner(manager: RunningManager, terminal: boolean): string {
  const { runtime, url } = manager;
  const rows: Array<[string, string]> = [
    ['Workspace', runtime.paths.root],
    ['Config file', runtime.configuration.filePath],
    ['Database', runtime.databasePath],
    ['Log file', runtime.logFilePath],
    ['Dashboard', dashboardLine(manager, terminal)],
    ['API', `${url}/api`],
  ];
  const isolation = manager.agentIsolation;
  rows.push([
    'Agents',
    isolation.enabled ? `isolated (${isolation.mechanism}): the workspaces' data is hidden from them` : 'NOT isolated',
  ]);
  const warning = manager.authenticationEnabled
    ? []
    : [
        '  WARNING: authentication is disabled (authentication: "none"). Anyone who can reach this',
        '  port can run commands on this machine through the agents.',
      ];
  if (manager.workspaceGit !== 'repository') {
    warning.push(
      `  WARNING: ${workspaceGitWarning(manager.workspaceGit, runtime.paths.root)}.`,
      `  To give each Requirement its own worktree and branch: ${workspaceGitFix(manager.workspaceGit)}`,
      '  (Requirements created after that get one; no restart needed.)',
    );
  }
  if (!isolation.enabled) {
    warning.push(
      `  WARNING: agents are not isolated: ${isolation.reason}.`,
      "  An agent can read this workspace's token and act as you (see docs/security.md).",
    );
  }
  return [
    `Agent Manager ${runtime.version}`,
    ...rows.map(([k, v]) => `  ${k.padEnd(12)}${v}`),
    ...warning,
    '  Press Ctrl+C to stop.',
    '',
  ].join('\n');
}

/** Starts the manager in this process, prints its banner, and serves until a stop signal. */
export async function runInForeground(flags: StartFlags): Promise<void> {
  const overrides: Partial<ConfigurationValues> = {};
  if (flags.host !== undefined) {
    overrides.host = flags.host;
  }
  if (flags.port !== undefined) {
    overrides.port = flags.port;
  }
  if (flags.db !== undefined) {
    if (/^postgres(ql)?:\/\//.test(flags.db)) {
      overrides.databaseUrl = flags.db;
    } else {
      overrides.databasePath = path.resolve(flags.db);
    }
  }
  if (flags.dbFile !== undefined) {
    overrides.databaseUrl = readDatabaseUrlFile(flags.dbFile);
  }
  if (flags.logLevel !== undefined) {
    overrides.logLevel = flags.logLevel;
  }
  if (flags.logFile !== undefined) {
    overrides.logFilePath = path.resolve(flags.logFile);
  }
  if (flags.allowOrigin !== undefined) {
    overrides.allowedOrigin = flags.allowOrigin;
  }
  if (flags.prReconcileInterval !== undefined) {
    overrides.pullRequestReconcileIntervalSeconds = flags.prReconcileInterval;
  }
  if (flags.personName !== undefined) {
    overrides.personName = flags.personName;
  }
  if (flags.personEmail !== undefined) {
    overrides.personEmail = flags.personEmail;
  }
  if (flags.board !== undefined) {
    overrides.board = flags.board === true ? 'origin' : flags.board;
  }

  const signals = new StopSignals({ stopWithParent: flags.stopWithParent === true });
  let manager: RunningManager;
  try {
    manager = await startManager({
      configPath: flags.config ? path.resolve(flags.config) : undefined,
      overrides,
      serving: {
        insecureHttp: flags.insecureHttp,
        tlsCertPath: flags.tlsCert === undefined ? undefined : path.resolve(flags.tlsCert),
        tlsKeyPath: flags.tlsKey === undefined ? undefined : path.resolve(flags.tlsKey),
      },
      workspace: flags.workspace ?? process.cwd(),
    });
  } catch (err) {
    signals.detach();
    if (
      err instanceof ServingRefused ||
      err instanceof InstanceLockedError ||
      err instanceof PostgresWorkspaceLockedError ||
      err instanceof ConfigurationFileError
    ) {
      throw new UsageError(err.message);
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      // Node's bare "listen EADDRINUSE: address already in use" leaves a person guessing: say who holds it.
      const { address, port } = err as NodeJS.ErrnoException & { address?: string; port?: number };
      throw new UsageError(
        `cannot listen: ${describePortInUse(address ?? flags.host ?? '127.0.0.1', port ?? flags.port ?? 4310, codeFactoryHome())}`,
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new UsageError(`cannot listen: ${(err as Error).message}`);
    }
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '28P01' || code === '3D000') {
      throw new UsageError(`cannot connect to PostgreSQL: ${(err as Error).message}`);
    }
    throw err;
  }
  process.stdout.write(banner(manager, process.stdout.isTTY === true));
  signals.attach(manager);
  await new Promise<void>(() => undefined);
}
