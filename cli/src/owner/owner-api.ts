import type { ApiClient } from '@libs/api-client';
import { createApiClient } from '@libs/api-client';

import { readToken } from '@server/auth/local-token';
import { runningInstance } from '@server/core/workspace/instance-lock';
import type { WorkspacePaths } from '@server/core/workspace/workspace';

import { ManagerApiError, Outcome, callManager } from '@server/agent-tools/manager-api';

const TIMEOUT_MS = 30_000;

/**
 * The owner's way to the running manager of one workspace, for `agent-manager mcp`: its URL from
 * the workspace lock, its local token from the token file, looked up again on every call so that
 * a manager started (or restarted on another port) after the MCP server is found.
 */
export class OwnerApi {
  private cached: { key: string; client: ApiClient; apiUrl: string } | null = null;

  constructor(private readonly paths: Pick<WorkspacePaths, 'lockPath' | 'root' | 'tokenPath'>) {}

  async call<T>(what: string, request: (client: ApiClient, signal: AbortSignal) => Promise<Outcome<T>>): Promise<T> {
    const { apiUrl, client } = this.connection();
    return callManager(client, { apiUrl, timeoutMs: TIMEOUT_MS }, what, request);
  }

  private connection(): { apiUrl: string; client: ApiClient } {
    const running = runningInstance(this.paths.lockPath);
    if (running === null || running.url === null) {
      const state =
        running === null ? 'No Agent Manager is running' : `Agent Manager (pid ${running.pid}) is still starting`;
      throw new ManagerApiError(
        `${state} for workspace ${this.paths.root}: start it with \`agent-manager start --workspace ${this.paths.root}\` (or \`npm start\`), then call again.`,
      );
    }
    // The token file exists once a manager has started; authentication "none" needs none.
    const token = readToken(this.paths.tokenPath);
    const key = `${running.url} ${token ?? ''}`;
    if (this.cached?.key !== key) {
      this.cached = {
        apiUrl: `${running.url}/api`,
        client: createApiClient(running.url, { token: token ?? undefined }),
        key,
      };
    }
    return this.cached;
  }
}
