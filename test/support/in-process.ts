import { LocalTokenService } from '@server/auth/local-token.service';
import type { Clock } from '@server/core/clock';
import { RunningManager, startManager } from '@server/manager';

import { apiClient } from './api';
import { WORKTREE_AGENT } from './git-repo';
import { registerToken } from './http';
import { type Sandbox, type StartArgs, type TestManager, managerEnv } from './manager-process';

/** A manager in the test's own process, with its Nest application at hand. */
export interface InProcessManager extends TestManager {
  running: RunningManager;
}

/**
 * `startManager` of ./manager-process for suites whose subject is the API, not the process: the
 * same sandbox, environment, synthetic agents and store, served by a real listening server on an
 * ephemeral port in the test's own process (about 0.8 s of CPU a start, against 3 s for a
 * process). Agents are still real child processes, started from the environment given here
 * (`Runtime.env`). What the manager's own git reads from the process's
 * environment, launch flags, a shell prefix and another Node.js need a process (docs/testing.md).
 */
export async function startInProcess({
  sandbox,
  env = {},
  args = [],
  shellPrefix,
  node,
  clock,
}: StartArgs & { clock?: Clock }): Promise<InProcessManager> {
  if (args.length > 0 || shellPrefix !== undefined || node !== undefined) {
    throw new Error('launch flags, a shell prefix and another Node.js need a manager process (./manager-process)');
  }
  const running = await startManager({
    ...(clock ? { clock } : {}),
    env: managerEnv(sandbox, env),
    overrides: { port: 0 },
    workspace: sandbox.workspace,
  });
  const token = running.app.get(LocalTokenService).value;
  registerToken(running.url, token);
  return {
    api: apiClient(running.url, { auth: token }),
    dataDirectory: () => running.runtime.paths.dataDirectory,
    origin: running.url,
    running,
    stop: async () => {
      await running.stop();
      return 0;
    },
    token,
  };
}

/**
 * `startInProcess` whose runs are the synthetic worktree agent (a real child process) and which
 * has no GitHub token, for suites that hold the Nest application itself (`RunningManager`).
 */
export async function startWorktreeManager(sandbox: Sandbox, clock?: Clock): Promise<RunningManager> {
  const { running } = await startInProcess({
    clock,
    env: {
      CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
      CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
      GH_TOKEN: '',
      GITHUB_TOKEN: '',
    },
    sandbox,
  });
  return running;
}
