import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Where one workspace keeps its state. Resolved once at start and never changed. */
export interface WorkspacePaths {
  /** realpath of the bound repository. */
  root: string;
  /** The Agent Manager home (`$CODE_FACTORY_HOME` or `~/.code-factory`). */
  home: string;
  /** `<home>/workspaces/<first 16 hex of sha256(root)>` */
  dataDirectory: string;
  /**
   * `<home>/bin/<key>`: the agents' `code-factory-cli` launcher. Outside `workspaces/` because
   * agents run in a sandbox that hides that whole tree (tokens, databases, logs).
   */
  launcherDirectory: string;
  defaultConfigPath: string;
  defaultDatabasePath: string;
  attachmentsDirectory: string;
  logsDirectory: string;
  defaultLogFilePath: string;
  lockPath: string;
  tokenPath: string;
}

/** The root of all workspaces' data: `$CODE_FACTORY_HOME` or `~/.code-factory`. */
export function codeFactoryHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.CODE_FACTORY_HOME?.trim();
  return path.resolve(fromEnv ? fromEnv : path.join(os.homedir(), '.code-factory'));
}

export function workspaceKey(root: string): string {
  return createHash('sha256').update(root).digest('hex').slice(0, 16);
}

/**
 * Where a workspace keeps its state, without creating anything: resolves symlinks so that one
 * repository has one data directory however it is reached. Commands that only read (`status`,
 * `stop`, `token`, `logs`, `mcp`) use this, so asking about a workspace that never ran leaves no
 * trace of it in the home.
 */
export function locateWorkspace(workspace: string, home = codeFactoryHome()): WorkspacePaths {
  let root: string;
  try {
    root = fs.realpathSync(path.resolve(workspace));
  } catch {
    throw new Error(`workspace ${workspace} does not exist`);
  }
  if (!fs.statSync(root).isDirectory()) {
    throw new Error(`workspace ${root} is not a directory`);
  }
  const key = workspaceKey(root);
  const dataDirectory = path.join(home, 'workspaces', key);
  return {
    attachmentsDirectory: path.join(dataDirectory, 'attachments'),
    dataDirectory,
    defaultConfigPath: path.join(dataDirectory, 'config.json'),
    defaultDatabasePath: path.join(dataDirectory, 'factory.sqlite'),
    defaultLogFilePath: path.join(dataDirectory, 'logs', 'agent-manager.log'),
    home,
    launcherDirectory: path.join(home, 'bin', key),
    lockPath: path.join(dataDirectory, 'manager.lock'),
    logsDirectory: path.join(dataDirectory, 'logs'),
    root,
    tokenPath: path.join(dataDirectory, 'token'),
  };
}

/**
 * Binds a workspace to run it: locates it and creates the directory tree (private to the user:
 * it holds the token).
 */
export function resolveWorkspace(workspace: string, home = codeFactoryHome()): WorkspacePaths {
  const paths = locateWorkspace(workspace, home);
  for (const dir of [paths.dataDirectory, paths.attachmentsDirectory, paths.logsDirectory]) {
    fs.mkdirSync(dir, { mode: 0o700, recursive: true });
  }
  return paths;
}
