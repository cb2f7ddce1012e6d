import * as fs from 'node:fs';
import * as path from 'node:path';

import { ManagerProcess, Sandbox, makeSandbox, startManager } from './manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './model-stub';

export type RealAgentCli = (typeof REAL_AGENT_CLIS)[number];

export interface RealAgentWorld {
  /** The variables that log the CLI in to the stub (its HOME, Codex's CODEX_HOME): where its own config lives. */
  agentEnv: Record<string, string>;
  sandbox: Sandbox;
  stub: ModelStub;
  manager: ManagerProcess;
}

/**
 * Registers the suite's beforeAll/afterAll for one real CLI: a model stub on loopback, a
 * temporary home and workspace, and a manager that runs that CLI (logged in to the stub, no
 * GitHub token) for every provider. `ready` receives the world once it is up.
 */
export interface RealAgentWorldOptions {
  /** Runs on the fresh sandbox before the manager starts (make the workspace a repository…). */
  prepare?: (sandbox: Sandbox) => void;
  /** More variables for the manager. */
  env?: Record<string, string>;
}

export function useRealAgentWorld(
  { env, executable, provider }: RealAgentCli,
  label: string,
  ready: (world: RealAgentWorld) => void,
  options: RealAgentWorldOptions = {},
): void {
  let world: Partial<RealAgentWorld> = {};
  beforeAll(async () => {
    const sandbox = makeSandbox();
    const stub = await ModelStub.start();
    world = { sandbox, stub };
    const agentEnv = env(stub, fs.mkdtempSync(path.join('/var/tmp', `am-${label}-${provider}-`)));
    options.prepare?.(sandbox);
    const manager = await startManager({
      env: {
        ...agentEnv,
        CODE_FACTORY_CLAUDE_EXECUTABLE: executable,
        CODE_FACTORY_CODEX_EXECUTABLE: executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
        ...options.env,
      },
      sandbox,
    });
    world.manager = manager;
    ready({ agentEnv, manager, sandbox, stub });
  });
  afterAll(async () => {
    await world.manager?.stop();
    await world.stub?.close();
    world.sandbox?.cleanup();
  });
}
