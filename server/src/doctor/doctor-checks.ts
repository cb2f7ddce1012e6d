import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import type { ConfigurationValues } from '@libs/contracts';

import { probeNetworkNamespace, probeSandbox } from '../agents/agent-sandbox';
import { findExecutable } from '../agents/executable';
import { probeProcessCap } from '../agents/run-limits';
import { CONFIGURATION_DEFAULTS } from '../core/configuration/configuration.schema';
import { probePostgres } from '../core/database/postgres/postgres-probe';
import { type PostgresStore, redactDatabaseUrl } from '../core/database/store';
import { describePortInUse } from '../core/port-holder';
import { overridesFromEnv } from '../core/configuration/configuration.service';
import { codeFactoryHome, workspaceKey } from '../core/workspace/workspace';
import { secretStates } from '../core/secrets/secrets.service';
import { resolveGitHubToken } from '../github/github-token';

/** ok: fine; warn: works, with less (no isolation, no GitHub); fail: what it names does not work. */
export type DoctorStatus = 'ok' | 'warn' | 'fail';

export interface DoctorCheck {
  id:
    | 'node'
    | 'git'
    | 'codex'
    | 'claude'
    | 'github'
    | 'isolation'
    | 'network'
    | 'environment'
    | 'worktrees'
    | 'port'
    | 'dataDirectory'
    | 'database';
  title: string;
  status: DoctorStatus;
  /** A failure of a required check makes `doctor` exit non-zero. */
  required: boolean;
  detail: string;
  /** How to fix it; null when there is nothing to fix. */
  fix: string | null;
  /** For an agent CLI: installed or not (a logged-out CLI is installed). */
  installed?: boolean;
  /**
   * What was found, as a stable code (`git.no_commit`) with the values `detail` and `fix` name
   * (paths, versions, the CLI's own error text): the dashboard writes them in the reader's
   * language (issue 26 §13); `detail` and `fix` stay English for the terminal and older clients.
   */
  code: string;
  args: DoctorArgs;
}

export type DoctorArgs = Record<string, string | number | boolean | null>;

export interface DoctorReport {
  /** False when a required check failed. */
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  workspace: string;
  env?: NodeJS.ProcessEnv;
  /** Launch overrides (`--port`, `--host`), as `start` would apply them. */
  overrides?: Partial<ConfigurationValues>;
  /** Each external command gets this long. */
  timeoutMs?: number;
  /**
   * The URL of the manager asking (GET /api/doctor): its own port is in use by itself, and its
   * store is open, so those two are reported as they are instead of probed.
   */
  serving?: string;
}

/**
 * package.json's `engines`: the oldest release of each line that runs the manager quietly. 20.19.0
 * and 22.12.0 run it too but print an ExperimentalWarning on every start (CommonJS `require()` of
 * Octokit's ES modules), which later releases of both lines dropped; 21 and 23 are odd lines,
 * never LTS. test/node-versions.e2e-spec.ts starts the manager on each line's minimum.
 */
export const NODE_ENGINES = '^20.19.1 || >=22.13.0';
export const MINIMUM_NODE_VERSION = '20.19.1';
const MINIMUM_NODE_22 = '22.13.0';

interface Exec {
  code: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
}

function exec(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<Exec> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, encoding: 'utf8', env, maxBuffer: 256 * 1024, timeout: timeoutMs, windowsHide: true },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({
          code,
          error:
            error && code === null ? (error.killed ? `no answer within ${timeoutMs / 1000} s` : error.message) : null,
          stderr,
          stdout,
        });
      },
    );
  });
}

function versionAtLeast(version: string, minimum: string): boolean {
  const a = version.replace(/^v/, '').split('.').map(Number);
  const b = minimum.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) {
      return (a[i] ?? 0) > (b[i] ?? 0);
    }
  }
  return true;
}

/**
 * The settings `start` would run with in this workspace: defaults, the workspace's config file
 * when there is one (never created here), the CODE_FACTORY_* environment, the launch flags.
 */
function effectiveConfiguration(
  root: string,
  home: string,
  env: NodeJS.ProcessEnv,
  overrides: Partial<ConfigurationValues>,
): ConfigurationValues {
  let file: Partial<ConfigurationValues> = {};
  try {
    file = JSON.parse(
      fs.readFileSync(path.join(home, 'workspaces', workspaceKey(root), 'config.json'), 'utf8'),
    ) as Partial<ConfigurationValues>;
  } catch {
    // none yet (first start) or unreadable: `start` reports the latter itself
  }
  return { ...CONFIGURATION_DEFAULTS, ...file, ...overridesFromEnv(env), ...overrides };
}

/** Whether `version` satisfies NODE_ENGINES. */
export function supportedNode(version: string): boolean {
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (major === 20) {
    return versionAtLeast(version, MINIMUM_NODE_VERSION);
  }
  return major >= 22 && versionAtLeast(version, MINIMUM_NODE_22);
}

export function checkNode(version = process.version): DoctorCheck {
  const ok = supportedNode(version);
  return {
    detail: `Node.js ${version}${ok ? '' : `; ${MINIMUM_NODE_VERSION}+ or ${MINIMUM_NODE_22}+ is needed`}`,
    fix: ok
      ? null
      : `install a maintained Node.js LTS, 24 or 26 (or ${MINIMUM_NODE_VERSION}+ / ${MINIMUM_NODE_22}+) from https://nodejs.org`,
    args: { minimum: MINIMUM_NODE_VERSION, minimum22: MINIMUM_NODE_22, version },
    code: ok ? 'node.ok' : 'node.too_old',
    id: 'node',
    required: true,
    status: ok ? 'ok' : 'fail',
    title: 'Node.js',
  };
}

async function checkGit(root: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const base = { id: 'git' as const, required: true, title: 'git' };
  const git = findExecutable('git', env.PATH ?? '', root);
  if (git === null) {
    return {
      ...base,
      args: {},
      code: 'git.missing',
      detail: 'git is not on the PATH',
      fix: 'install git (for example apt-get install git)',
      status: 'fail',
    };
  }
  const version = await exec(git, ['--version'], env, root, timeoutMs);
  if (version.code !== 0) {
    const error = (version.error ?? version.stderr).trim();
    return {
      ...base,
      args: { error, path: git },
      code: 'git.version_failed',
      detail: `${git} --version failed: ${error}`,
      fix: 'reinstall git',
      status: 'fail',
    };
  }
  const repo = await exec(git, ['rev-parse', '--show-toplevel'], env, root, timeoutMs);
  const detail = version.stdout.trim();
  if (repo.code !== 0) {
    return {
      ...base,
      args: { folder: root, version: detail },
      code: 'git.not_a_repository',
      detail: `${detail}; ${root} is not inside a git repository: agents would work in place, directly in this folder`,
      fix: 'run Agent Manager inside your repository, or make this one: git init && git add -A && git commit -m "Initial commit"',
      required: false,
      status: 'warn',
    };
  }
  // `git init` alone is a repository without worktrees (they need a commit to branch from): agents
  // would work in the person's checkout, which must not pass for "git ✓".
  const head = await exec(git, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], env, root, timeoutMs);
  if (head.code !== 0) {
    return {
      ...base,
      args: { repository: repo.stdout.trim(), version: detail },
      code: 'git.no_commit',
      detail: `${detail}; repository ${repo.stdout.trim()} has no commit yet: agents would work in place, directly in your checkout, not in worktrees of their own`,
      fix: 'make a first commit: git add -A && git commit -m "Initial commit"',
      required: false,
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { repository: repo.stdout.trim(), version: detail },
    code: 'git.ok',
    detail: `${detail}; repository ${repo.stdout.trim()}`,
    fix: null,
    status: 'ok',
  };
}

interface AgentCli {
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

async function checkAgentCli(
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

async function checkGitHub(apiUrl: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const base = { id: 'github' as const, required: false, title: 'GitHub token' };
  const fixToken =
    'set GITHUB_TOKEN (or GH_TOKEN), or log in with `gh auth login`; pull requests are not followed without one';
  const found = await resolveGitHubToken({ env, timeoutMs });
  if (found === null) {
    return {
      ...base,
      args: {},
      code: 'github.no_token',
      detail: 'no token in GITHUB_TOKEN, GH_TOKEN or `gh auth token`',
      fix: fixToken,
      status: 'warn',
    };
  }
  const url = `${apiUrl.replace(/\/+$/, '')}/user`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${found.token}`,
        'user-agent': 'agent-manager-doctor',
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
    return {
      ...base,
      args: { error: cause, source: found.source, url },
      code: 'github.unreachable',
      detail: `token from ${found.source}; ${url} could not be reached (${cause})`,
      fix: 'check the network, or githubApiUrl in the configuration',
      status: 'warn',
    };
  }
  if (response.status === 401) {
    return {
      ...base,
      args: { source: found.source, url: apiUrl },
      code: 'github.rejected',
      detail: `the token from ${found.source} is rejected by ${apiUrl} (401)`,
      fix: `renew it; ${fixToken}`,
      status: 'fail',
    };
  }
  if (!response.ok) {
    return {
      ...base,
      args: { source: found.source, status: response.status, url },
      code: 'github.bad_answer',
      detail: `token from ${found.source}; GET ${url} answered ${response.status}`,
      fix: 'check githubApiUrl in the configuration',
      status: 'warn',
    };
  }
  const login = ((await response.json().catch(() => ({}))) as { login?: string }).login ?? 'unknown user';
  const header = response.headers.get('x-oauth-scopes');
  if (header === null) {
    // Fine-grained tokens and GitHub App tokens carry their permissions per repository instead.
    return {
      ...base,
      args: { login, source: found.source },
      code: 'github.fine_grained',
      detail: `token from ${found.source} (${login}); fine-grained (no OAuth scopes to list)`,
      fix: null,
      status: 'ok',
    };
  }
  const scopes = header
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!scopes.includes('repo') && !scopes.includes('public_repo')) {
    return {
      ...base,
      args: { login, scopes: scopes.join(', '), source: found.source },
      code: 'github.missing_scope',
      detail: `token from ${found.source} (${login}); scopes: ${scopes.join(', ') || 'none'}`,
      fix: 'give the token the `repo` scope (or `public_repo` for public repositories only) to read pull requests',
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { login, scopes: scopes.join(', '), source: found.source },
    code: 'github.ok',
    detail: `token from ${found.source} (${login}); scopes: ${scopes.join(', ')}`,
    fix: null,
    status: 'ok',
  };
}

/** The per-run limits as they would apply here (issue 44 §5), in words and as values. */
function describeLimits(
  configuration: ConfigurationValues,
  sandboxed: boolean,
  env: NodeJS.ProcessEnv,
  root: string,
): { text: string; args: DoctorArgs } {
  const cap = probeProcessCap(env.PATH ?? '', root);
  const processes =
    cap.kind === 'cgroup'
      ? `${configuration.agentProcessLimit} processes per run (a pids cgroup each)`
      : cap.kind === 'rlimit'
        ? `${configuration.agentProcessLimit} processes per run (RLIMIT_NPROC in its sandbox)`
        : `processes not capped: ${cap.reason}`;
  const space = sandboxed
    ? `; /tmp, /var/tmp and $TMPDIR ${configuration.agentTmpSizeMb} MB and /dev/shm ${configuration.agentShmSizeMb} MB of each run's own`
    : '';
  return {
    args: {
      processCap: cap.kind,
      processLimit: configuration.agentProcessLimit,
      shmMb: configuration.agentShmSizeMb,
      tmpMb: configuration.agentTmpSizeMb,
    },
    text: `limits: ${processes}${space}`,
  };
}

async function checkIsolation(
  mode: 'auto' | 'off',
  root: string,
  env: NodeJS.ProcessEnv,
  configuration: ConfigurationValues,
): Promise<DoctorCheck> {
  const base = { id: 'isolation' as const, required: false, title: 'Agent isolation' };
  // The same probe the manager runs at start, on a throw-away tree instead of the real data.
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'am-doctor-'));
  try {
    const hidden = path.join(tree, 'hidden');
    fs.mkdirSync(hidden);
    const witness = path.join(hidden, 'witness');
    fs.writeFileSync(witness, '');
    const { isolation } = await probeSandbox({
      cwd: root,
      hidden: [hidden],
      mode,
      searchPath: env.PATH ?? '',
      witness,
    });
    const limits = describeLimits(configuration, isolation.mechanism === 'bubblewrap', env, root);
    if (isolation.enabled) {
      return {
        ...base,
        args: { mechanism: isolation.mechanism, ...limits.args },
        code: 'isolation.ok',
        detail: `agents run in a ${isolation.mechanism} sandbox that hides every workspace's data; ${limits.text}`,
        fix: null,
        status: 'ok',
      };
    }
    return {
      ...base,
      args: { reason: isolation.reason, ...limits.args },
      code:
        mode === 'off'
          ? 'isolation.off'
          : process.platform === 'darwin'
            ? 'isolation.unavailable_macos'
            : 'isolation.unavailable',
      detail: `agents would NOT be isolated: ${isolation.reason}`,
      fix:
        mode === 'off'
          ? 'set agentIsolation to "auto" in the configuration'
          : process.platform === 'darwin'
            ? 'sandbox-exec ships with macOS: check that /usr/bin/sandbox-exec exists and runs'
            : 'install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces',
      status: 'warn',
    };
  } finally {
    fs.rmSync(tree, { force: true, recursive: true });
  }
}

/**
 * Whether agent runs get a network of their own (issue 45), in which mode, and why not: without
 * one, runs are refused (503 network_isolation_unavailable) unless the person chose `open`.
 */
async function checkNetwork(
  root: string,
  env: NodeJS.ProcessEnv,
  configuration: ConfigurationValues,
): Promise<DoctorCheck> {
  const base = { id: 'network' as const, required: false, title: 'Agent network' };
  const mode = configuration.networkMode;
  if (mode === 'open') {
    return {
      ...base,
      args: { mode },
      code: 'network.open',
      detail: 'agents reach the whole network (networkMode is "open"): no proxy, nothing blocked',
      fix: 'set networkMode to "allow_list" so agents reach only the hosts you allow',
      status: 'warn',
    };
  }
  let reason: string | null;
  if (configuration.agentIsolation === 'off') {
    reason = 'agentIsolation is "off"';
  } else if (process.platform === 'darwin') {
    // Seatbelt: a profile that lets a run reach its proxy's port alone (no namespace to probe).
    reason = fs.existsSync('/usr/bin/sandbox-exec') ? null : 'sandbox-exec (Seatbelt) is not available on this Mac';
  } else if (process.platform !== 'linux') {
    reason = `a network of their own needs bubblewrap (Linux) or Seatbelt (macOS); this is ${process.platform}`;
  } else {
    const program = findExecutable('bwrap', env.PATH ?? '', root);
    reason = program === null ? 'bubblewrap (`bwrap`) is not installed' : await probeNetworkNamespace(program);
  }
  if (reason === null) {
    const reach = mode === 'offline' ? 'only the model API and Agent Manager' : 'only the hosts allowed';
    return {
      ...base,
      args: { mode },
      code: `network.${mode}`,
      detail: `agent runs have a network of their own (${mode}): they reach ${reach}, through a filtering proxy`,
      fix: null,
      status: 'ok',
    };
  }
  return {
    ...base,
    args: { mode, reason },
    code: 'network.unavailable',
    detail: `agent runs will be refused (network_isolation_unavailable): ${reason}`,
    fix: 'install bubblewrap with unprivileged user namespaces, or set networkMode to "open" to let agents reach the whole network',
    status: 'warn',
  };
}

/**
 * What an agent's environment holds besides what a shell and its CLI need (issue 45): the
 * variables the person passes, and the secrets kept from it (given to their setup and teardown
 * commands, or added by the proxy as a header), each with whether its value can be read.
 */
function checkAgentEnvironment(configuration: ConfigurationValues): DoctorCheck {
  const base = { id: 'environment' as const, required: false, title: 'Agent environment' };
  const pass = configuration.agentEnvironmentPass.join(', ') || 'nothing';
  const states = secretStates(configuration.secrets);
  const secrets =
    states.map((state) => `${state.name}${state.host === null ? '' : ` (header for ${state.host})`}`).join(', ') ||
    'none';
  const missing = states.filter((state) => !state.available);
  if (missing.length > 0) {
    const problems = missing.map((state) => state.problem).join('; ');
    return {
      ...base,
      args: { pass, problems, secrets },
      code: 'environment.secret_missing',
      detail: `secrets whose value cannot be read (runs go on without them): ${problems}`,
      fix: "export the variable in the manager's environment, or write the value to the file and chmod 600 it",
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { pass, secrets },
    code: 'environment.ok',
    detail: `agents see what a shell and their CLI need, and passed: ${pass}; secrets kept from them: ${secrets}`,
    fix: null,
    status: 'ok',
  };
}

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

function checkPort(host: string, port: number, home: string): Promise<DoctorCheck> {
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

function checkDataDirectory(home: string): DoctorCheck {
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
async function checkDatabase(
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

/** Everything a first run needs, each with how to fix a miss. Reads and probes only. */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 10_000;
  let root = path.resolve(options.workspace);
  try {
    root = fs.realpathSync(root);
  } catch {
    // reported by the git check (the directory is not a repository)
  }
  const home = codeFactoryHome(env);
  const configuration = effectiveConfiguration(root, home, env, options.overrides ?? {});
  const cwd = fs.existsSync(root) ? root : process.cwd();
  const clis: AgentCli[] = [
    {
      credentialsBesidesLogin: codexCredentialsBesidesLogin,
      defaultName: 'codex',
      executable: configuration.codexExecutable,
      id: 'codex',
      install: 'install the Codex CLI (npm i -g @openai/codex)',
      installCommand: 'npm i -g @openai/codex',
      login: 'run `codex login`',
      loginCommand: 'codex login',
      setting: 'codexExecutable',
      statusArgs: ['login', 'status'],
      title: 'Codex CLI',
    },
    {
      defaultName: 'claude',
      executable: configuration.claudeExecutable,
      id: 'claude',
      install: 'install Claude Code (npm i -g @anthropic-ai/claude-code)',
      installCommand: 'npm i -g @anthropic-ai/claude-code',
      login: 'run `claude` once and log in (or `claude setup-token`)',
      loginCommand: 'claude setup-token',
      setting: 'claudeExecutable',
      statusArgs: ['auth', 'status'],
      title: 'Claude Code',
    },
  ];
  const serving = options.serving;
  const [git, codex, claude, github, isolation, network, port, database] = await Promise.all([
    checkGit(cwd, env, timeoutMs),
    checkAgentCli(clis[0], cwd, env, timeoutMs),
    checkAgentCli(clis[1], cwd, env, timeoutMs),
    checkGitHub(configuration.githubApiUrl, env, timeoutMs),
    checkIsolation(configuration.agentIsolation, cwd, env, configuration),
    checkNetwork(cwd, env, configuration),
    serving
      ? Promise.resolve<DoctorCheck>({
          args: { url: serving },
          code: 'port.serving',
          detail: `serving on ${serving}`,
          fix: null,
          id: 'port',
          required: true,
          status: 'ok',
          title: 'Port',
        })
      : checkPort(configuration.host, configuration.port, home),
    checkDatabase(configuration, root, home, timeoutMs),
  ]);
  // One agent CLI is enough; with neither, no Requirement can run. A missing one beside a present
  // one says so, so that nobody installs both thinking both are needed.
  const agents = [codex, claude].map(({ found, ...check }) => {
    const other = check.id === 'codex' ? claude : codex;
    if (!codex.found && !claude.found) {
      return {
        ...check,
        args: { ...check.args, noAgent: true },
        detail: `${check.detail}; neither Codex nor Claude Code is usable (one is enough)`,
        installed: found,
        required: true,
        status: 'fail' as const,
      };
    }
    const onlyOther = !found && check.status === 'warn' && other.found;
    return {
      ...check,
      args: onlyOther ? { ...check.args, otherCli: other.title } : check.args,
      detail: onlyOther
        ? `${check.detail}; not needed while ${other.title} is there (one agent CLI is enough)`
        : check.detail,
      installed: found,
    };
  });
  const checks = [
    checkNode(),
    git,
    ...agents,
    github,
    isolation,
    network,
    checkAgentEnvironment(configuration),
    checkWorktrees(root, home, configuration.worktreeRoot),
    port,
    checkDataDirectory(home),
    database,
  ];
  return { checks, ok: !checks.some((c) => c.required && c.status === 'fail') };
}

/** The report for a terminal: one line per check, the fix indented under a miss. */
export function formatDoctorReport(report: DoctorReport): string {
  const mark: Record<DoctorStatus, string> = { fail: '✗', ok: '✓', warn: '!' };
  const lines = report.checks.flatMap((c) => [
    `${mark[c.status]} ${c.title.padEnd(17)}${c.detail}`,
    ...(c.fix ? [`  ${' '.repeat(17)}→ ${c.fix}`] : []),
  ]);
  const failed = report.checks.filter((c) => c.required && c.status === 'fail').length;
  lines.push(
    '',
    report.ok
      ? 'Ready: `agent-manager` starts Agent Manager here.'
      : `${failed} required check${failed === 1 ? '' : 's'} failed.`,
  );
  return `${lines.join('\n')}\n`;
}
