import * as fs from 'node:fs';
import * as path from 'node:path';

import { redactDatabaseUrl } from '@server/core/database/store';

import { UsageError } from './options';

// A command line is public on a shared machine: every local user reads it with `ps` (and
// /proc/<pid>/cmdline) for as long as the process runs. Secrets are therefore taken from the
// environment (CODE_FACTORY_DATABASE_URL) or from a file only the user can read (`--db-file`);
// one given on the command line all the same is accepted, warned about, and hidden from the
// process table as soon as the program runs.

const DATABASE_URL = /postgres(ql)?:\/\/\S*/i;

/** Whether a postgres:// URL carries a password: in its user info, or as a password-like parameter. */
export function carriesPassword(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.password !== '' || [...parsed.searchParams.keys()].some((key) => /pass|secret|key/i.test(key));
  } catch {
    // Unparsable: it may hold anything.
    return true;
  }
}

/** The arguments with every database URL's password removed; null when none held one. */
export function concealedArguments(argv: readonly string[]): string[] | null {
  let changed = false;
  const concealed = argv.map((arg) => {
    const match = DATABASE_URL.exec(arg);
    if (!match || !carriesPassword(match[0])) {
      return arg;
    }
    changed = true;
    return `${arg.slice(0, match.index)}${redactDatabaseUrl(match[0])}`;
  });
  return changed ? concealed : null;
}

/**
 * Rewrites this process's command line without the passwords it holds (Node's `process.title`
 * overwrites the memory /proc/<pid>/cmdline is read from), so that a foreground `start --db
 * postgres://user:password@…`, which runs for days, does not show the password all that time.
 * What ran before this line (the shell, `npm`, the first instants of this process) cannot be
 * helped: hence the warning.
 */
export function concealCommandLine(): void {
  const concealed = concealedArguments(commandLine());
  if (concealed !== null) {
    process.title = concealed.join(' ');
  }
}

/**
 * The command line as the kernel shows it (the script path as typed, Node's own options): the
 * title must fit in its room, so it is rewritten from that rather than from `process.argv`,
 * whose absolute paths are longer.
 */
function commandLine(): string[] {
  try {
    return fs.readFileSync('/proc/self/cmdline', 'utf8').replace(/\0$/, '').split('\0');
  } catch {
    return [process.argv0, ...process.execArgv, ...process.argv.slice(1)];
  }
}

/** One line on stderr when a password was given on the command line. */
export function warnAboutPasswordArgument(flag: string, url: string, instead: string): void {
  if (carriesPassword(url)) {
    process.stderr.write(
      `agent-manager: warning: the password in ${flag} is on the command line, where other local users can read it (ps) and your shell history keeps it; ${instead}\n`,
    );
  }
}

/**
 * The database URL of `--db-file`: the file's first non-empty line, a postgres:// URL. The file
 * must be readable by its owner alone (as libpq wants of ~/.pgpass): a secret in a file others
 * can read is no better kept than on the command line.
 */
export function readDatabaseUrlFile(file: string): string {
  const absolute = path.resolve(file);
  let stat: fs.Stats;
  let text: string;
  try {
    stat = fs.statSync(absolute);
    text = fs.readFileSync(absolute, 'utf8');
  } catch (err) {
    throw new UsageError(`--db-file ${absolute}: ${(err as Error).message}`);
  }
  if ((stat.mode & 0o077) !== 0) {
    throw new UsageError(
      `--db-file ${absolute} can be read by other users (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}): \`chmod 600 ${absolute}\` first`,
    );
  }
  const url = text
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '');
  if (url === undefined || !/^postgres(ql)?:\/\//i.test(url)) {
    throw new UsageError(`--db-file ${absolute} must hold a postgres://… URL on its first line`);
  }
  return url;
}
