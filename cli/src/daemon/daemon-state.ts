import * as fs from 'node:fs';
import * as path from 'node:path';

import { processInfo } from '@server/core/process-table';
import type { WorkspacePaths } from '@server/core/workspace/workspace';

/**
 * What the supervisor of a detached manager is doing. `failed`: the manager exited before it was
 * ever healthy (not restarted); `stopped`: a stop was asked for, or the manager ended with exit 0.
 */
export type DaemonStatus = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped' | 'failed';

/** One crash of a manager that had been healthy, and the delay chosen before the next start. */
export interface DaemonCrash {
  at: string;
  exitCode: number | null;
  signal: string | null;
  /** How long that manager had been healthy. */
  uptimeMs: number;
  delayMs: number;
}

/**
 * The supervisor's state file, `daemon.json` in the workspace's data directory. Written only by
 * the supervisor holding `supervisor.lock` (temp file + rename, so readers never see half of it);
 * everyone else reads it and checks the pids it names against the process table, because a
 * supervisor killed with -9 leaves it behind as it was.
 */
export interface DaemonState {
  workspace: string;
  status: DaemonStatus;
  /** Why it failed or stopped; null while all is well. */
  reason: string | null;
  supervisorPid: number;
  /** Kernel start time of the supervisor, so a recycled pid is not taken for it. */
  supervisorStartTime: string | null;
  startedAt: string;
  managerPid: number | null;
  managerStartTime: string | null;
  /** When the current manager became healthy (answered /api/health). */
  managerStartedAt: string | null;
  url: string | null;
  /** How many times a crashed manager was started again. */
  restarts: number;
  /** The latest crashes, oldest first (bounded). */
  crashes: DaemonCrash[];
  /** When the next start after a crash is due (while `restarting`). */
  nextStartAt: string | null;
  logPath: string;
  /**
   * The `agent-manager start` arguments the manager runs with; `restart` reuses them. Never a
   * secret: those are in `DaemonPaths.secretsPath` (see manager-launch.ts).
   */
  managerArgs: string[];
}

export interface DaemonPaths {
  statePath: string;
  /** The secrets the manager is started with (mode 0600), kept for `restart`. */
  secretsPath: string;
  supervisorLockPath: string;
  logPath: string;
}

export function daemonPaths(paths: Pick<WorkspacePaths, 'dataDirectory' | 'logsDirectory'>): DaemonPaths {
  return {
    logPath: path.join(paths.logsDirectory, 'daemon.log'),
    secretsPath: path.join(paths.dataDirectory, 'daemon-secrets.json'),
    statePath: path.join(paths.dataDirectory, 'daemon.json'),
    supervisorLockPath: path.join(paths.dataDirectory, 'supervisor.lock'),
  };
}

export function readDaemonState(statePath: string): DaemonState | null {
  try {
    const state = JSON.parse(fs.readFileSync(statePath, 'utf8')) as DaemonState;
    return typeof state.supervisorPid === 'number' ? state : null;
  } catch {
    return null;
  }
}

export function writeDaemonState(statePath: string, state: DaemonState): void {
  const tmp = `${statePath}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, statePath);
}

/** Whether this pid is still the process that was recorded (not a zombie, not a recycled pid). */
export function isSameProcessAlive(pid: number | null, startTime: string | null): boolean {
  if (pid === null) {
    return false;
  }
  const info = processInfo(pid);
  if (info === null || info.state === 'Z' || info.state === 'X') {
    return false;
  }
  return startTime === null || info.startTime === startTime;
}
