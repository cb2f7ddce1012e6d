import * as path from 'node:path';

import { Command, CommandRunner, Option } from 'nest-commander';

import { LOG_LEVELS, LogLevel } from '@libs/contracts';

import { codeFactoryHome, resolveWorkspace } from '@server/core/workspace/workspace';

import { startDetached } from '../daemon/daemon-control';
import { formatDetachedStart, terminalLoginUrl } from '../daemon/daemon-format';
import { separateSecrets } from '../daemon/manager-launch';
import { UsageError, parseIntegerOption } from '../options';
import { readDatabaseUrlFile, warnAboutPasswordArgument } from '../secret-arguments';
import type { StartFlags } from './start-foreground';

/** How long `start --detach` waits for the manager to be healthy (a PostgreSQL store may be slow to reach). */
export const DETACHED_START_TIMEOUT_MS = 120_000;

/**
 * The flags a detached manager is started with, paths made absolute: the supervisor runs it from
 * the workspace, and `restart` runs it again from wherever it is called.
 */
function managerArgs(flags: StartFlags): string[] {
  const args: string[] = [];
  const add = (flag: string, value: string | number | undefined) => {
    if (value !== undefined) {
      args.push(flag, String(value));
    }
  };
  add('--host', flags.host);
  add('--port', flags.port);
  add('--db', flags.db === undefined || /^postgres(ql)?:\/\//.test(flags.db) ? flags.db : path.resolve(flags.db));
  // The file's name, not its content: the manager reads it at each start (restart included).
  add('--db-file', flags.dbFile === undefined ? undefined : path.resolve(flags.dbFile));
  add('--config', flags.config === undefined ? undefined : path.resolve(flags.config));
  add('--log-level', flags.logLevel);
  add('--log-file', flags.logFile === undefined ? undefined : path.resolve(flags.logFile));
  add('--allow-origin', flags.allowOrigin);
  add('--pr-reconcile-interval', flags.prReconcileInterval);
  add('--person-name', flags.personName);
  add('--person-email', flags.personEmail);
  add('--board', flags.board === true ? 'origin' : flags.board);
  add('--tls-cert', flags.tlsCert === undefined ? undefined : path.resolve(flags.tlsCert));
  add('--tls-key', flags.tlsKey === undefined ? undefined : path.resolve(flags.tlsKey));
  if (flags.insecureHttp === true) {
    args.push('--insecure-http');
  }
  return args;
}

@Command({
  description:
    'Start Agent Manager on a repository (the current directory by default); also what `agent-manager` alone runs',
  name: 'start',
  // An installed package is used as `agent-manager` inside the repository, with no subcommand.
  options: { isDefault: true },
})
export class StartCommand extends CommandRunner {
  async run(_params: string[], flags: StartFlags): Promise<void> {
    if (flags.db !== undefined && flags.dbFile !== undefined) {
      throw new UsageError('--db and --db-file both name the database: give one');
    }
    if (flags.db !== undefined) {
      warnAboutPasswordArgument(
        '--db',
        flags.db,
        'pass the URL in CODE_FACTORY_DATABASE_URL or in a file (--db-file, mode 0600) instead',
      );
    }
    if (flags.detach) {
      await this.runDetached(flags);
      return;
    }
    // The manager, and all it loads, only for a foreground start: `--detach` and `--help` need none of it.
    const { runInForeground } = await import('./start-foreground');
    await runInForeground(flags);
  }

  private async runDetached(flags: StartFlags): Promise<void> {
    if (flags.stopWithParent) {
      throw new UsageError(
        '--stop-with-parent and --detach contradict each other: a detached manager outlives the command that started it',
      );
    }
    let paths;
    try {
      paths = resolveWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (flags.dbFile !== undefined) {
      // Refused here, where the person sees why, rather than in the background.
      readDatabaseUrlFile(flags.dbFile);
    }
    const started = await startDetached(paths, separateSecrets(managerArgs(flags)), DETACHED_START_TIMEOUT_MS);
    // The login link for the person who asked: the manager's own banner went to daemon.log without it.
    process.stdout.write(formatDetachedStart(started, terminalLoginUrl(paths, started.state.url)));
  }

  @Option({ description: 'Repository to bind (default: the current directory)', flags: '-w, --workspace <dir>' })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({ description: 'Interface to listen on (default 127.0.0.1)', flags: '--host <host>' })
  parseHost(value: string): string {
    return value;
  }

  @Option({
    description:
      'TLS certificate (PEM): required, with --tls-key, to serve beyond loopback (--host), e.g. from `tailscale cert`',
    flags: '--tls-cert <file>',
  })
  parseTlsCert(value: string): string {
    return value;
  }

  @Option({ description: "The TLS certificate's private key (PEM)", flags: '--tls-key <file>' })
  parseTlsKey(value: string): string {
    return value;
  }

  @Option({
    description:
      'Serve plain HTTP beyond loopback anyway (a TLS proxy in front, a network you trust): credentials cross it in clear',
    flags: '--insecure-http',
  })
  parseInsecureHttp(): boolean {
    return true;
  }

  @Option({ description: 'Port to listen on (default 4310; 0 picks a free one)', flags: '-p, --port <port>' })
  parsePort(value: string): number {
    return parseIntegerOption('--port', value, 0, 65535);
  }

  @Option({
    description:
      'SQLite database file (default: factory.sqlite in the data directory), or postgres://… to use PostgreSQL (a password here is visible to other local users: prefer --db-file or CODE_FACTORY_DATABASE_URL)',
    flags: '--db <path|url>',
  })
  parseDb(value: string): string {
    return value;
  }

  @Option({
    description:
      'A file holding the postgres://… URL (with its password), readable by you alone (mode 0600); keeps the password off the command line, as CODE_FACTORY_DATABASE_URL does',
    flags: '--db-file <path>',
  })
  parseDbFile(value: string): string {
    return value;
  }

  @Option({ description: 'Configuration file (default: config.json in the data directory)', flags: '--config <path>' })
  parseConfig(value: string): string {
    return value;
  }

  @Option({ description: `Log level: ${LOG_LEVELS.join(', ')}`, flags: '--log-level <level>' })
  parseLogLevel(value: string): LogLevel {
    if (!(LOG_LEVELS as readonly string[]).includes(value)) {
      throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
    }
    return value as LogLevel;
  }

  @Option({
    description: 'Log file (default: logs/agent-manager.log in the data directory)',
    flags: '--log-file <path>',
  })
  parseLogFile(value: string): string {
    return value;
  }

  @Option({
    description: 'Extra browser origin allowed to call the API, e.g. http://localhost:4200',
    flags: '--allow-origin <origin>',
  })
  parseAllowOrigin(value: string): string {
    return value;
  }

  @Option({
    description: 'Seconds between pull request reconciliations (0 disables)',
    flags: '--pr-reconcile-interval <seconds>',
  })
  parsePrReconcileInterval(value: string): number {
    return parseIntegerOption('--pr-reconcile-interval', value, 0, 2_147_483);
  }

  @Option({
    description:
      "Your name on this manager's events and messages (default: git's global user.name, else your OS account)",
    flags: '--person-name <name>',
  })
  parsePersonName(value: string): string {
    return value;
  }

  @Option({
    description: "Your email on this manager's events (default: git's global user.email)",
    flags: '--person-email <email>',
  })
  parsePersonEmail(value: string): string {
    return value;
  }

  @Option({
    description:
      "Team mode (needs --db postgres://…): join this board as one of its runners; without a name, the board of the repository's origin URL, which every clone of it meets on",
    flags: '--board [name]',
  })
  parseBoard(value: string): string {
    return value;
  }

  @Option({
    description:
      'Run in the background under a supervisor that restarts it after a crash; returns once it is healthy (see `status`, `stop`, `restart`, `logs`)',
    flags: '-d, --detach',
  })
  parseDetach(): boolean {
    return true;
  }

  @Option({
    description: 'Stop (gracefully) when the process that started this one exits; `npm start` uses it',
    flags: '--stop-with-parent',
  })
  parseStopWithParent(): boolean {
    return true;
  }
}
