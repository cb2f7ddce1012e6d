import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { findExecutable } from '../agents/executable';
import { exec } from './doctor-exec';
import { DoctorCheck } from './doctor-report';

// One check per agent CLI: found, runnable, and logged in (or given a key).

export interface AgentCli {
  id: 'codex' | 'claude';
  title: string;
  executable: string;
  setting: string;
  /** The name on the PATH it has by default (`codex`, `claude`). */
  defaultName: string;
  install: string;
  login: string;
  /** The commands alone, for the dashboard's own sentence around them. */
  installCommand: string;
  loginCommand: string;
  /** The CLI's own status command: exit 0 when logged in. Neither spends a token. */
  statusArgs: string[];
  /**
   * Credentials the CLI's runs use without its login (an API key in the environment, a model
   * provider of its own configuration): what they are, or null. The status command knows only
   * the login, and called such a setup "not logged in" while its runs succeeded. (Claude Code's
   * own status already counts ANTHROPIC_API_KEY.)
   */
  credentialsBesidesLogin?: (env: NodeJS.ProcessEnv) => string | null;
}

/**
 * Codex's model provider from its config.toml (`$CODEX_HOME/config.toml`, by default
 * `~/.codex/config.toml`) when that is not OpenAI's own: a provider with `env_key` whose variable
 * is set, or one that needs no key (a local server). Only the top-level `model_provider` and its
 * `[model_providers.<id>]` table are read, with a minimal TOML reading of `key = "value"` lines.
 */
export function codexCredentialsBesidesLogin(env: NodeJS.ProcessEnv): string | null {
  if (env.CODEX_API_KEY) {
    return 'an API key in CODEX_API_KEY';
  }
  const home = env.CODEX_HOME || path.join(env.HOME || os.homedir(), '.codex');
  const file = path.join(home, 'config.toml');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const tables = new Map<string, Map<string, string>>();
  let table = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      table = header[1].replace(/\s/g, '').replace(/"/g, '');
      continue;
    }
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(line);
    if (pair) {
      const values = tables.get(table) ?? new Map<string, string>();
      values.set(pair[1], pair[2] ?? pair[3]);
      tables.set(table, values);
    }
  }
  const provider = tables.get('')?.get('model_provider');
  if (!provider || provider === 'openai') {
    return null;
  }
  const settings = tables.get(`model_providers.${provider}`);
  if (!settings) {
    return null;
  }
  const envKey = settings.get('env_key');
  if (envKey === undefined) {
    return `model provider "${provider}" of ${file}, which needs no OpenAI login`;
  }
  return env[envKey] ? `model provider "${provider}" of ${file}, with its API key in ${envKey}` : null;
}

export async function checkAgentCli(
  cli: AgentCli,
  root: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<DoctorCheck & { found: boolean }> {
  const base = { found: false, id: cli.id, required: false, title: cli.title };
  // What every finding's text names: the setting, the commands to install and log in (kept verbatim).
  const cliArgs = {
    defaultName: cli.defaultName,
    install: cli.installCommand,
    login: cli.loginCommand,
    setting: cli.setting,
    statusCommand: `${cli.executable} ${cli.statusArgs.join(' ')}`,
  };
  // A configured path (not a bare name) is not looked up on the PATH: say what is wrong with it.
  const configuredPath = cli.executable.includes('/');
  const found = findExecutable(cli.executable, env.PATH ?? '', root);
  if (found === null) {
    if (configuredPath) {
      const exists = fs.existsSync(path.resolve(root, cli.executable));
      return {
        ...base,
        args: { ...cliArgs, path: cli.executable },
        code: exists ? 'cli.not_executable' : 'cli.path_missing',
        detail: `${cli.executable} (${cli.setting}) ${exists ? 'is not an executable file' : 'does not exist'}: runs with ${cli.title} fail`,
        fix: `set ${cli.setting} to the CLI's real path, or to \`${cli.defaultName}\` to use the one on the PATH (${cli.install})`,
        status: 'fail',
      };
    }
    return {
      ...base,
      args: { ...cliArgs, name: cli.executable },
      code: 'cli.not_on_path',
      detail: `\`${cli.executable}\` is not on the PATH`,
      fix: `${cli.install}, or set ${cli.setting} in the configuration`,
      status: 'warn',
    };
  }
  const version = await exec(found, ['--version'], env, root, timeoutMs);
  if (version.code !== 0) {
    const error = (version.error ?? version.stderr).trim().split('\n')[0];
    return {
      ...base,
      args: { ...cliArgs, error, path: found },
      code: 'cli.version_failed',
      detail: `${found} --version failed: ${error}`,
      fix: `reinstall it (${cli.install})`,
      status: 'fail',
    };
  }
  const status = await exec(found, cli.statusArgs, env, root, timeoutMs);
  const name = version.stdout.trim().split('\n')[0];
  if (status.code !== 0) {
    const besides = cli.credentialsBesidesLogin?.(env) ?? null;
    if (besides !== null) {
      return {
        ...base,
        args: { ...cliArgs, credentials: besides, path: found, version: name },
        code: 'cli.other_credentials',
        detail: `${name} at ${found}; not logged in, but runs use ${besides}`,
        fix: null,
        found: true,
        status: 'ok',
      };
    }
    const why = status.error
      ? `\`${cli.executable} ${cli.statusArgs.join(' ')}\` gave no answer: ${status.error}`
      : 'not logged in';
    return {
      ...base,
      args: { ...cliArgs, error: status.error, path: found, version: name },
      code: status.error ? 'cli.no_status_answer' : 'cli.not_logged_in',
      detail: `${name} at ${found}; ${why}`,
      fix: cli.login,
      found: true,
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { ...cliArgs, path: found, version: name },
    code: 'cli.logged_in',
    detail: `${name} at ${found}; logged in`,
    fix: null,
    found: true,
    status: 'ok',
  };
}
