import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { workspaceKey } from '@server/core/workspace/workspace';

import { TypedApi, apiClient } from './api';
import { registerToken } from './http';
import { dropSchemasSync } from './postgres';

/** The project root, from the sources (tests) or from dist/ (benchmarks). */
export const ROOT = ((): string => {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) || !fs.existsSync(path.join(dir, 'bin', 'agent-manager.js'))) {
    dir = path.dirname(dir);
  }
  return dir;
})();
const BIN = path.join(ROOT, 'bin', 'agent-manager.js');

/** A temporary CODE_FACTORY_HOME and workspace (a plain directory standing in for a repository). */
export interface Sandbox {
  home: string;
  workspace: string;
  /**
   * Where the test and its agents exchange files (reports, flags, scripts): the one folder outside
   * their own work the agents may write (agentWritablePaths). Every run has a /tmp of its own, so
   * nothing an agent writes under the test's temporary folder reaches the test otherwise.
   */
  shared: string;
  cleanup(): void;
}

export function makeSandbox(): Sandbox {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-e2e-'));
  const home = path.join(base, 'home');
  const workspace = path.join(base, 'repo');
  const shared = path.join(base, 'shared');
  fs.mkdirSync(workspace, { recursive: true });
  fs.mkdirSync(shared);
  return {
    cleanup: () => {
      // On PostgreSQL each workspace of this home has a schema: dropped with the home.
      const workspaces = path.join(home, 'workspaces');
      dropSchemasSync(
        fs.existsSync(workspaces)
          ? fs
              .readdirSync(workspaces)
              .filter((key) => /^[0-9a-f]{16}$/.test(key))
              .map((key) => `am_${key}`)
          : [],
      );
      fs.rmSync(base, { force: true, recursive: true });
    },
    home,
    shared,
    workspace,
  };
}

/** What an API suite asks of its manager, whether it runs as a process or in the test's own process. */
export interface TestManager {
  /** The workspace's local access token (already registered for `send` and `connectSse`). */
  token: string;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** The typed client (`./api`), authenticated with `token`. */
  api: TypedApi;
  /** A graceful stop; resolves with the exit code (0 in process). */
  stop(): Promise<number | null>;
  dataDirectory(): string;
}

export interface ManagerProcess extends TestManager {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** SIGKILL: a crash. */
  kill9(): Promise<void>;
}

export interface StartArgs {
  sandbox: Sandbox;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Shell commands run before the manager replaces the shell (process limits: `ulimit -f …`). */
  shellPrefix?: string;
  /** The Node.js executable that runs the manager (default: the one running the tests). */
  node?: string;
}

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Unless a suite says otherwise, runs use a silent synthetic agent (see idle-agent.js). */
export const IDLE_AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'idle-agent.js');
/** With TEST_DATABASE_URL every manager keeps its store on that PostgreSQL server (in its workspace's schema); suites that start one in-process add this to its env. */
export const STORE_ENV: NodeJS.ProcessEnv = process.env.TEST_DATABASE_URL
  ? { CODE_FACTORY_DATABASE_URL: process.env.TEST_DATABASE_URL }
  : {};
/**
 * The model catalog's automatic refresh is off by default in tests: it would start every suite's
 * agent CLI (`codex app-server`) and ask its model stub for a list the suite never scripted.
 */
const DEFAULT_AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT,
  CODE_FACTORY_MODEL_CATALOG_REFRESH_HOURS: '0',
  ...STORE_ENV,
};

/** The environment a test's manager starts with, as a process or in the test's own process. */
export function managerEnv(sandbox: Sandbox, env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CODE_FACTORY_AGENT_WRITABLE_PATHS: sandbox.shared,
    CODE_FACTORY_HOME: sandbox.home,
    ...DEFAULT_AGENTS,
    ...env,
  };
}

/** Runs `agent-manager start` and resolves once the banner shows the URL. */
export async function startManager({
  sandbox,
  args = [],
  env = {},
  shellPrefix,
  node = process.execPath,
}: StartArgs): Promise<ManagerProcess> {
  const argv = [BIN, 'start', '--workspace', sandbox.workspace, '--port', '0', ...args];
  const [command, commandArgs] = shellPrefix
    ? ['/bin/sh', ['-c', `${shellPrefix}; exec "$0" "$@"`, node, ...argv]]
    : [node, argv];
  const child = spawn(command, commandArgs, {
    env: managerEnv(sandbox, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`manager did not start in time\nstdout: ${out}\nstderr: ${err}`)),
      30_000,
    );
    const check = () => {
      const match = /API\s+(http:\/\/[^\s]+)\/api/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`manager exited with ${code}\nstdout: ${out}\nstderr: ${err}`));
    });
  });
  child.removeAllListeners('exit');
  const dataDirectory = path.join(sandbox.home, 'workspaces', workspaceKey(fs.realpathSync(sandbox.workspace)));
  const token = fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim();
  registerToken(origin, token);
  return {
    api: apiClient(origin, { auth: token }),
    child,
    dataDirectory: () => dataDirectory,
    kill9: async () => {
      child.kill('SIGKILL');
      await waitForExit(child);
    },
    origin,
    stderr: () => err,
    token,
    stdout: () => out,
    stop: async () => {
      child.kill('SIGTERM');
      return waitForExit(child);
    },
  };
}

/** Runs the launcher to completion (for refusals): exit code and output. */
export function runLauncher(
  sandbox: Sandbox,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: managerEnv(sandbox, env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    });
  });
}
