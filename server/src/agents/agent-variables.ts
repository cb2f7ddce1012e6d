import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Provider } from '@libs/contracts';

import { VARIABLE_PATTERN } from '../core/environment-variables';

/**
 * What of the manager's environment an agent process sees (issue 45): what a shell and the CLI
 * need, the provider's own API key and base-URL variables, and the names the person lists
 * (`agentEnvironmentPass`), nothing else. Not the person's `GITHUB_TOKEN`/`GH_TOKEN` (push to
 * every repository they can), cloud credentials, `SSH_AUTH_SOCK`, or whatever else their shell
 * exported. An entry ending in `*` names a prefix.
 */
export const AGENT_BASE_VARIABLES = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'FORCE_COLOR',
  'TZ',
  'TMPDIR',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'EDITOR',
  'VISUAL',
  'PAGER',
  // Where a company's TLS interception puts its root certificate: without it nothing verifies.
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  // git's configuration given through the environment (as readable in ~/.gitconfig, which an
  // agent sees too), and an identity: git in the run behaves as the person's does.
  'GIT_CONFIG_COUNT',
  'GIT_CONFIG_KEY_*',
  'GIT_CONFIG_VALUE_*',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  // Where the person's toolchains live: without them an agent's build cannot find its compiler.
  'GOPATH',
  'GOROOT',
  'GOFLAGS',
  'CARGO_HOME',
  'RUSTUP_HOME',
  'JAVA_HOME',
  'NVM_DIR',
  'NVM_BIN',
  'PNPM_HOME',
  'BUN_INSTALL',
  'DENO_DIR',
  'PYENV_ROOT',
  'PYENV_VERSION',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'CONDA_DEFAULT_ENV',
  'RBENV_ROOT',
  'GEM_HOME',
  'GEM_PATH',
  'ANDROID_HOME',
  'ANDROID_SDK_ROOT',
];

/** Each provider's own variables: its key, base URL and settings. */
export const PROVIDER_VARIABLES: Record<Provider, string[]> = {
  'claude-code': [
    'ANTHROPIC_*',
    'CLAUDE_*',
    'IS_SANDBOX',
    'DISABLE_AUTOUPDATER',
    'DISABLE_BUG_COMMAND',
    'DISABLE_COST_WARNINGS',
    'DISABLE_ERROR_REPORTING',
    'DISABLE_NON_ESSENTIAL_MODEL_CALLS',
    'DISABLE_TELEMETRY',
    'MAX_THINKING_TOKENS',
    'MCP_TIMEOUT',
    'MCP_TOOL_TIMEOUT',
    'BASH_DEFAULT_TIMEOUT_MS',
    'BASH_MAX_TIMEOUT_MS',
  ],
  codex: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_ORGANIZATION', 'OPENAI_PROJECT', 'CODEX_*'],
};

function matches(entries: readonly string[], name: string): boolean {
  return entries.some((entry) => (entry.endsWith('*') ? name.startsWith(entry.slice(0, -1)) : name === entry));
}

/**
 * The variables of `source` an agent process of `provider` (null: a setup or teardown command,
 * which gets what every provider's CLI would; `none`: a program of the agent's working copy, a
 * preview or a terminal, which gets no provider's) may see, with `pass` added, and never one named
 * in `secrets` (a configured secret is the proxy's and the person's commands', whatever the lists say).
 */
export function agentVariables(
  source: NodeJS.ProcessEnv,
  pass: readonly string[],
  provider: Provider | null | 'none',
  secrets: readonly string[] = [],
): Record<string, string> {
  const providers =
    provider === 'none' ? [] : provider === null ? (Object.keys(PROVIDER_VARIABLES) as Provider[]) : [provider];
  const allowed = [...AGENT_BASE_VARIABLES, ...providers.flatMap((p) => PROVIDER_VARIABLES[p]), ...pass];
  if (providers.includes('codex')) {
    // The key variable a Codex model provider names (`env_key` in its config.toml).
    allowed.push(...codexConfigValues(source, 'env_key').filter((name) => VARIABLE_PATTERN.test(name)));
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    // The manager's own settings never reach an agent, whatever the list says.
    if (value !== undefined && !name.startsWith('CODE_FACTORY_') && !secrets.includes(name) && matches(allowed, name)) {
      env[name] = value;
    }
  }
  return env;
}

/** The string values of `key` anywhere in Codex's config.toml (CODEX_HOME, else ~/.codex); [] without one. */
export function codexConfigValues(env: NodeJS.ProcessEnv, key: string): string[] {
  const home = env.CODEX_HOME || path.join(env.HOME || os.homedir(), '.codex');
  let text: string;
  try {
    const file = path.join(home, 'config.toml');
    if (fs.statSync(file).size > 1024 * 1024) {
      return [];
    }
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const pattern = new RegExp(`^\\s*${key}\\s*=\\s*["']([^"'\\n]+)["']`, 'gm');
  return [...text.matchAll(pattern)].map((m) => m[1]);
}
