import * as fs from 'node:fs';

import { writeAtomically } from '@server/core/configuration/atomic-file';
import { envName } from '@server/core/configuration/configuration-env';

/**
 * How a detached manager is started. A process's command line is readable by every local user
 * (`ps`, /proc/<pid>/cmdline) for as long as it runs, its environment only by its owner: so the
 * flags go on the supervisor's and the manager's command lines, and the secrets among them (a
 * PostgreSQL URL, which may carry a password) go in the environment instead, as the
 * CODE_FACTORY_* variable the configuration reads anyway.
 */
export interface ManagerLaunch {
  /** `agent-manager start` flags, none of them secret. */
  args: string[];
  /** CODE_FACTORY_* variables holding what was taken out of `args`. */
  env: Record<string, string>;
}

/** The variable carrying `ManagerLaunch.env` from `start --detach` to its supervisor (JSON). */
export const SUPERVISOR_ENV_VARIABLE = 'CODE_FACTORY_SUPERVISOR_ENV';

const DATABASE_URL_VARIABLE = envName('databaseUrl');
const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/**
 * Splits start flags into what may be shown and what may not: `--db postgres://…` becomes
 * CODE_FACTORY_DATABASE_URL (a SQLite path stays a flag). Also applied to the arguments an older
 * version recorded in daemon.json, which still held the URL.
 */
export function separateSecrets(args: readonly string[]): ManagerLaunch {
  const kept: string[] = [];
  const env: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const inline = /^--db=(.*)$/s.exec(arg);
    const value = inline ? inline[1] : arg === '--db' ? args[i + 1] : undefined;
    if (value !== undefined && POSTGRES_URL.test(value)) {
      env[DATABASE_URL_VARIABLE] = value;
      i += inline ? 0 : 1;
      continue;
    }
    kept.push(arg);
  }
  return { args: kept, env };
}

/** The supervisor's side: the variables `start --detach` handed over, removed from `env`. */
export function takeSupervisorEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = env[SUPERVISOR_ENV_VARIABLE];
  delete env[SUPERVISOR_ENV_VARIABLE];
  if (!raw) {
    return {};
  }
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return {};
    }
    return Object.fromEntries(
      Object.entries(parsed).filter(
        (entry): entry is [string, string] =>
          /^CODE_FACTORY_[A-Z0-9_]+$/.test(entry[0]) && typeof entry[1] === 'string',
      ),
    );
  } catch {
    return {};
  }
}

/**
 * What `restart` needs to start the manager "with the same arguments" includes the secrets, so
 * the supervisor keeps them beside daemon.json in a file of their own, mode 0600 (the data
 * directory is 0700 and hidden from agents, like the token next to it). daemon.json itself
 * holds no secret, so it can be read or shown freely.
 */
export function writeLaunchSecrets(filePath: string, env: Record<string, string>): void {
  if (Object.keys(env).length === 0) {
    fs.rmSync(filePath, { force: true });
    return;
  }
  writeAtomically(filePath, `${JSON.stringify({ env }, null, 2)}\n`, 0o600);
}

export function readLaunchSecrets(filePath: string): Record<string, string> {
  try {
    const { env } = JSON.parse(fs.readFileSync(filePath, 'utf8')) as { env?: Record<string, string> };
    return env !== null && typeof env === 'object' ? env : {};
  } catch {
    return {};
  }
}
