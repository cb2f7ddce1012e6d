import { LocalTokenService } from '@server/auth/local-token.service';
import type { Clock } from '@server/core/clock';
import { RunningManager, startManager } from '@server/manager';

import { WORKTREE_AGENT } from './git-repo';
import { registerToken } from './http';
import type { Sandbox } from './manager-process';

/**
 * A manager in the test's own process on the sandbox's workspace (a real listening server on an
 * ephemeral port, a real SQLite file), whose runs are the synthetic worktree agent as a real child
 * process, with no GitHub token; its token is registered for the typed client.
 */
export async function startWorktreeManager(sandbox: Sandbox, clock?: Clock): Promise<RunningManager> {
  const manager = await startManager({
    ...(clock ? { clock } : {}),
    env: {
      ...process.env,
      CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
      CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
      CODE_FACTORY_HOME: sandbox.home,
      GH_TOKEN: '',
      GITHUB_TOKEN: '',
    },
    overrides: { port: 0 },
    workspace: sandbox.workspace,
  });
  registerToken(manager.url, manager.app.get(LocalTokenService).value);
  return manager;
}
