import * as fs from 'node:fs';
import * as path from 'node:path';

import type { ConfigurationValues } from '@libs/contracts';

import { CONFIGURATION_DEFAULTS } from '../core/configuration/configuration.schema';
import { overridesFromEnv } from '../core/configuration/configuration.service';
import { runningInstance } from '../core/workspace/instance-lock';
import { codeFactoryHome, workspaceKey } from '../core/workspace/workspace';
import { AgentCli, checkAgentCli, codexCredentialsBesidesLogin } from './agent-cli-check';
import { checkAgentEnvironment, checkIsolation, checkNetwork } from './containment-checks';
import { DoctorCheck, DoctorOptions, DoctorReport } from './doctor-report';
import { checkGitHub } from './github-check';
import { checkGit, checkNode } from './runtime-checks';
import { checkDataDirectory, checkDatabase, checkPort, checkWorktrees } from './workspace-checks';

// Every check in the order a person fixes them, with the configuration `start` would use.

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
  // The person's own manager of this workspace on the port asked about is what serves there:
  // the dashboard sends people to doctor exactly while it runs (issue 47 §5).
  const serving = options.serving ?? ownManagerOn(root, home, configuration.port);
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

/**
 * The URL of this workspace's running Agent Manager when it listens on `port` (its lock names a
 * live process and the URL it serves), else undefined: then the port is probed as for a start.
 */
function ownManagerOn(root: string, home: string, port: number): string | undefined {
  const own = runningInstance(path.join(home, 'workspaces', workspaceKey(root), 'manager.lock'));
  if (own?.url === null || own?.url === undefined) {
    return undefined;
  }
  try {
    return Number(new URL(own.url).port) === port ? own.url : undefined;
  } catch {
    return undefined;
  }
}
