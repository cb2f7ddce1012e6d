import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import type { ConfigurationValues } from '@libs/contracts';

import { probePostgres } from '../core/database/postgres/postgres-probe';
import { type PostgresStore, redactDatabaseUrl } from '../core/database/store';
import { describePortInUse } from '../core/port-holder';
import { workspaceKey } from '../core/workspace/workspace';
import { DoctorCheck } from './doctor-report';

// The workspace's own resources: its working copies, the port, the data directory and the store.

/** Working copies named in a finding; the count says how many more. */
const WORKTREES_NAMED = 20;

/**
 * The working copies of this workspace's Requirements (issue 44): each a repository of its
 * agent's own, or a linked worktree of the person's repository made before that existed (its
 * agent could write the person's objects and refs), which becomes one at its next run. Read off
 * the disk: a folder whose `.git` is a directory, or a file.
 */
export function checkWorktrees(root: string, home: string, worktreeRoot: string | null): DoctorCheck {
  const base = { id: 'worktrees' as const, required: false, title: 'Working copies' };
  const directory = path.join(worktreeRoot ?? path.join(home, 'worktrees'), workspaceKey(root));
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(directory).sort();
  } catch {
    // none yet
  }
  const own: string[] = [];
  const linked: string[] = [];
  for (const entry of entries) {
    const dotGit = fs.lstatSync(path.join(directory, entry, '.git'), { throwIfNoEntry: false });
    if (dotGit?.isDirectory()) {
      own.push(entry);
    } else if (dotGit?.isFile()) {
      linked.push(entry);
    }
  }
  const named = (list: string[]) =>
    list.slice(0, WORKTREES_NAMED).join(', ') +
    (list.length > WORKTREES_NAMED ? ` and ${list.length - WORKTREES_NAMED} more` : '');
  const layouts = [...own.map((e) => `${e}: own repository`), ...linked.map((e) => `${e}: linked worktree`)]
    .slice(0, WORKTREES_NAMED)
    .join('; ');
  const args = { directory, layouts, linked: linked.length, linkedNames: named(linked), own: own.length };
  if (linked.length === 0) {
    return {
      ...base,
      args,
      code: 'worktrees.ok',
      detail: `${own.length} working cop${own.length === 1 ? 'y' : 'ies'} in ${directory}, each a repository of its agent's own${own.length > 0 ? ` (${named(own)})` : ''}`,
      fix: null,
      status: 'ok',
    };
  }
  return {
    ...base,
    args,
    code: 'worktrees.linked',
    detail: `${linked.length} of the ${own.length + linked.length} working copies in ${directory} are linked worktrees of your repository, made before each agent got a repository of its own: ${named(linked)} (${layouts})`,
    fix: 'each becomes a repository of its own at its next run: start or reply to those Requirements, or cancel the ones you no longer need',
    status: 'warn',
  };
}

export function checkPort(host: string, port: number, home: string): Promise<DoctorCheck> {
  const base = { id: 'port' as const, required: true, title: 'Port' };
  if (port === 0) {
    return Promise.resolve({
      ...base,
      args: {},
      code: 'port.any',
      detail: 'port 0: a free one is picked at start',
      fix: null,
      status: 'ok',
    });
  }
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      resolve({
        ...base,
        args: {
          address: `${host}:${port}`,
          error: err.code ?? err.message,
          holder: err.code === 'EADDRINUSE' ? describePortInUse(host, port, home) : null,
        },
        code: 'port.unavailable',
        // Who holds it (another Agent Manager, or which process) is what a person needs to act.
        detail: `${host}:${port} cannot be listened on (${err.code ?? err.message}${err.code === 'EADDRINUSE' ? `: ${describePortInUse(host, port, home)}` : ''})`,
        fix: 'stop what uses it, or start with --port <another> (or set port in the configuration)',
        status: 'fail',
      }),
    );
    server.listen({ exclusive: true, host, port }, () =>
      server.close(() =>
        resolve({
          ...base,
          args: { address: `${host}:${port}` },
          code: 'port.free',
          detail: `${host}:${port} is free`,
          fix: null,
          status: 'ok',
        }),
      ),
    );
  });
}

export function checkDataDirectory(home: string): DoctorCheck {
  const base = { id: 'dataDirectory' as const, required: true, title: 'Data directory' };
  // The nearest existing ancestor is what must be writable; nothing is created here.
  let existing = home;
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) {
    existing = path.dirname(existing);
  }
  try {
    if (!fs.statSync(existing).isDirectory()) {
      return {
        ...base,
        args: { path: existing },
        code: 'data.not_directory',
        detail: `${existing} is not a directory`,
        fix: `remove it, or set CODE_FACTORY_HOME to a writable directory`,
        status: 'fail',
      };
    }
    fs.accessSync(existing, fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return {
      ...base,
      args: { existing, path: home },
      code: 'data.not_writable',
      detail: `${home} is not writable (${existing} refuses writes)`,
      fix: `make ${existing} writable, or set CODE_FACTORY_HOME to a writable directory`,
      status: 'fail',
    };
  }
  return { ...base, args: { path: home }, code: 'data.ok', detail: `${home} is writable`, fix: null, status: 'ok' };
}

/**
 * The store `start` would open: the SQLite file (in the data directory, checked above, or where
 * databasePath says), or the PostgreSQL server: reachable, logged in, and allowed to create the
 * workspace's schema (or already holding it), with a manager of this workspace on it or not.
 */
export async function checkDatabase(
  configuration: ConfigurationValues,
  root: string,
  home: string,
  timeoutMs: number,
): Promise<DoctorCheck> {
  const base = { id: 'database' as const, required: true, title: 'Database' };
  if (!configuration.databaseUrl) {
    const file = configuration.databasePath
      ? path.resolve(path.join(home, 'workspaces', workspaceKey(root)), configuration.databasePath)
      : path.join(home, 'workspaces', workspaceKey(root), 'factory.sqlite');
    const exists = fs.existsSync(file);
    return {
      ...base,
      args: { path: file },
      code: exists ? 'database.sqlite' : 'database.sqlite_new',
      detail: `SQLite, ${file}${exists ? '' : ' (created at first start)'}`,
      fix: null,
      status: 'ok',
    };
  }
  const shown = redactDatabaseUrl(configuration.databaseUrl) ?? '';
  const store: PostgresStore = {
    board: null,
    kind: 'postgres',
    poolSize: 1,
    schema: `am_${workspaceKey(root)}`,
    statementTimeoutMs: timeoutMs,
    tls: configuration.databaseTls,
    url: configuration.databaseUrl,
  };
  try {
    const { version, canCreate, hasSchema, held } = await probePostgres(store, timeoutMs);
    const where = `PostgreSQL ${version} at ${shown}, schema ${store.schema}`;
    if (!hasSchema && !canCreate) {
      return {
        ...base,
        args: { schema: store.schema, url: shown, version },
        code: 'database.pg_cannot_create',
        detail: `${where} does not exist and this user may not create it`,
        fix: `GRANT CREATE ON DATABASE <database> TO <user>, or create the schema ${store.schema} for this user`,
        status: 'fail',
      };
    }
    const state = hasSchema
      ? held
        ? '; a manager of this workspace is connected to it'
        : '; holds this workspace'
      : ' (created at first start)';
    const code = hasSchema ? (held ? 'database.pg_in_use' : 'database.pg_ok') : 'database.pg_new';
    return {
      ...base,
      args: { schema: store.schema, url: shown, version },
      code,
      detail: `${where}${state}`,
      fix: null,
      status: 'ok',
    };
  } catch (err) {
    const error = err as NodeJS.ErrnoException;
    const why =
      error.code === '28P01' || error.code === '28000'
        ? 'the login is refused'
        : error.code === '3D000'
          ? 'the database does not exist'
          : error.message;
    return {
      ...base,
      args: { error: why, url: shown },
      code: 'database.pg_unreachable',
      detail: `cannot connect to ${shown}: ${why}`,
      fix: 'check databaseUrl (user, password, host, port, database), the server, and databaseTls; or remove databaseUrl to use SQLite',
      status: 'fail',
    };
  }
}
