import * as path from 'node:path';

import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';

import type { PostgresStore } from '@server/core/database/store';
import { InstanceLock, InstanceLockedError } from '@server/core/workspace/instance-lock';
import { codeFactoryHome, resolveWorkspace } from '@server/core/workspace/workspace';

import { UsageError } from '../options';

interface CopyFlags {
  to?: string;
  workspace?: string;
  config?: string;
  tls?: PostgresStore['tls'];
}

@SubCommand({
  description:
    "Copy this workspace's SQLite store into PostgreSQL (an empty schema of its own on that server); the SQLite file is left as it was",
  name: 'copy',
})
export class DbCopyCommand extends CommandRunner {
  async run(_params: string[], flags: CopyFlags): Promise<void> {
    if (!flags.to || !/^postgres(ql)?:\/\//.test(flags.to)) {
      throw new UsageError('--to postgres://user@host/database is required (the PostgreSQL server to copy into)');
    }
    // The store and both drivers, loaded when a copy runs: not for `--help` or any other command.
    const { ConfigurationFileError, ConfigurationService, overridesFromEnv } =
      await import('@server/core/configuration/configuration.service');
    const { redactDatabaseUrl, schemaFor } = await import('@server/core/database/store');
    const { StoreCopyError, copyStore } = await import('@server/core/database/store-copy');
    let paths;
    let configuration;
    try {
      paths = resolveWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
      // The source is the SQLite store this workspace runs on without a database URL.
      const { databaseUrl: _ignored, ...env } = overridesFromEnv(process.env);
      configuration = new ConfigurationService(
        flags.config ? path.resolve(flags.config) : paths.defaultConfigPath,
        env,
      );
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (configuration.get('databaseUrl')) {
      throw new UsageError(
        `this workspace already runs on PostgreSQL (${redactDatabaseUrl(configuration.get('databaseUrl'))}): there is no SQLite store to copy`,
      );
    }
    const databasePath = configuration.get('databasePath');
    const source = {
      kind: 'sqlite' as const,
      path: databasePath ? path.resolve(paths.dataDirectory, databasePath) : paths.defaultDatabasePath,
    };
    const target: PostgresStore = {
      board: null,
      kind: 'postgres',
      poolSize: 1,
      schema: schemaFor(paths),
      statementTimeoutMs: 0,
      tls: flags.tls ?? configuration.get('databaseTls'),
      url: flags.to,
    };
    // The workspace's own lock: no manager writes the source while it is read.
    const lock = new InstanceLock(paths.lockPath);
    try {
      lock.acquire();
    } catch (err) {
      if (err instanceof InstanceLockedError) {
        throw new UsageError(`${err.message}: stop it first (the copy reads a store no one writes)`);
      }
      throw err;
    }
    try {
      process.stdout.write(
        `Copying ${source.path}\n     to ${redactDatabaseUrl(target.url)} (schema ${target.schema})\n`,
      );
      const result = await copyStore(source, target, (line) => process.stdout.write(`  ${line}\n`));
      const rows = result.tables.reduce((n, t) => n + t.rows, 0);
      process.stdout.write(
        [
          `Copied ${rows} rows in ${result.tables.length} tables in ${result.seconds.toFixed(1)} s; both stores compared equal.`,
          `Start on PostgreSQL with: agent-manager --db '${redactDatabaseUrl(target.url)}'  (or set databaseUrl in ${configuration.filePath})`,
          `The SQLite file is unchanged; keep it as a backup, or remove it once the team runs on PostgreSQL.`,
          '',
        ].join('\n'),
      );
    } catch (err) {
      if (err instanceof StoreCopyError || err instanceof ConfigurationFileError) {
        throw new UsageError(err.message);
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '28P01' || code === '3D000' || code === '28000') {
        throw new UsageError(`cannot connect to PostgreSQL: ${(err as Error).message}`);
      }
      throw err;
    } finally {
      lock.release();
    }
  }

  @Option({
    description: 'PostgreSQL server to copy into: postgres://user[:password]@host[:port]/database',
    flags: '--to <url>',
  })
  parseTo(value: string): string {
    return value;
  }

  @Option({
    description: 'Repository whose store to copy (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({ description: 'Configuration file (default: config.json in the data directory)', flags: '--config <path>' })
  parseConfig(value: string): string {
    return value;
  }

  @Option({
    description:
      'TLS to the server: url (as the URL says), require, verify (default: databaseTls in the configuration)',
    flags: '--tls <mode>',
  })
  parseTls(value: string): PostgresStore['tls'] {
    if (value !== 'url' && value !== 'require' && value !== 'verify') {
      throw new UsageError('--tls must be one of url, require, verify');
    }
    return value;
  }
}

@Command({
  description: "The workspace's store: `db copy --to postgres://…` moves it from SQLite to PostgreSQL",
  name: 'db',
  subCommands: [DbCopyCommand],
})
export class DbCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('name a db command: `agent-manager db copy --to postgres://…`');
  }
}
