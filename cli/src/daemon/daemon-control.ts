import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { isRunning, processStartTime } from '@server/core/process-table';
import { runningInstance } from '@server/core/workspace/instance-lock';
import type { WorkspacePaths } from '@server/core/workspace/workspace';

import { UsageError } from '../options';
import { DaemonState, DaemonStatus, daemonPaths, readDaemonState } from './daemon-state';
import { ManagerLaunch, SUPERVISOR_ENV_VARIABLE, readLaunchSecrets, separateSecrets } from './manager-launch';
import type { SupervisorReport } from './supervisor-report';

const SUPERVISOR_ENTRY = path.join(__dirname, 'supervisor.js');
const POLL_MS = 100;

/**
 * What runs for a workspace, from the files that say so and the process table that confirms
 * them: the manager from its workspace lock (a detached one, a foreground one, or one whose
 * supervisor was killed), the supervisor from its own lock, and the supervisor's last state.
 */
export interface DaemonView {
  manager: { pid: number; url: string | null } | null;
  supervisorPid: number | null;
  /** The state file, if any: that of the live supervisor, or the last one's. */
  state: DaemonState | null;
}

export function inspectDaemon(paths: WorkspacePaths): DaemonView {
  const daemon = daemonPaths(paths);
  const supervisor = runningInstance(daemon.supervisorLockPath);
  return {
    manager: runningInstance(paths.lockPath),
    state: readDaemonState(daemon.statePath),
    supervisorPid: supervisor?.pid ?? null,
  };
}

/** The state file when it is the live supervisor's (not a dead one's left behind). */
function liveState(view: DaemonView): DaemonState | null {
  return view.state !== null && view.supervisorPid !== null && view.state.supervisorPid === view.supervisorPid
    ? view.state
    : null;
}

/** How `status` words what it found. */
export function describeStatus(view: DaemonView): {
  status: DaemonStatus | 'not-running';
  supervised: boolean;
  reason: string | null;
} {
  const state = liveState(view);
  if (view.manager !== null) {
    if (state !== null) {
      return {
        reason: null,
        status: state.status === 'starting' && view.manager.url !== null ? 'running' : state.status,
        supervised: true,
      };
    }
    const orphaned = view.state !== null && view.state.managerPid === view.manager.pid;
    return {
      reason: orphaned
        ? `its supervisor (pid ${view.state?.supervisorPid}) is gone: a crash will not be restarted (\`agent-manager restart\` starts it again, supervised)`
        : 'started in the foreground, not supervised',
      status: view.manager.url === null ? 'starting' : 'running',
      supervised: false,
    };
  }
  if (state !== null) {
    return { reason: state.reason, status: state.status, supervised: true };
  }
  if (view.state !== null && (view.state.status === 'failed' || view.state.status === 'stopped')) {
    return { reason: view.state.reason, status: 'not-running', supervised: false };
  }
  if (view.state !== null) {
    return {
      reason: `its supervisor (pid ${view.state.supervisorPid}) was killed, and its manager has ended since`,
      status: 'not-running',
      supervised: false,
    };
  }
  return { reason: null, status: 'not-running', supervised: false };
}

async function waitFor<T>(probe: () => T | null, timeoutMs: number): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== null || Date.now() > deadline) {
      return value;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export interface DetachedStart {
  state: DaemonState;
  /** Another supervisor already ran it (a second or concurrent start). */
  alreadyRunning: boolean;
}

/** A concurrent start's supervisor: its state once its manager is healthy; its failure, thrown. */
async function awaitOtherSupervisor(
  paths: WorkspacePaths,
  supervisorPid: number,
  timeoutMs: number,
): Promise<DetachedStart> {
  const statePath = daemonPaths(paths).statePath;
  const settled = await waitFor(() => {
    const state = readDaemonState(statePath);
    const ours = state !== null && state.supervisorPid === supervisorPid ? state : null;
    if (ours !== null && ours.status !== 'starting' && ours.status !== 'restarting') {
      return ours;
    }
    return isRunning(supervisorPid)
      ? null
      : (ours ?? readDaemonState(statePath) ?? ({ reason: 'its supervisor exited', status: 'failed' } as DaemonState));
  }, timeoutMs);
  if (settled === null) {
    throw new UsageError(
      `Agent Manager is starting under another supervisor (pid ${supervisorPid}) and not healthy after ${timeoutMs / 1000} s; see \`agent-manager status\``,
    );
  }
  if (settled.status !== 'running') {
    throw new UsageError(`Agent Manager did not start: ${settled.reason ?? settled.status}`);
  }
  return { alreadyRunning: true, state: settled };
}

/**
 * `start --detach`: spawns the supervisor detached from this terminal and waits until it says the
 * manager is healthy (or why not). The supervisor lock, and behind it the manager's workspace
 * lock, make two concurrent starts give one manager: the second learns who has it and waits for
 * that one.
 */
export async function startDetached(
  paths: WorkspacePaths,
  launch: ManagerLaunch,
  timeoutMs: number,
): Promise<DetachedStart> {
  const view = inspectDaemon(paths);
  if (view.supervisorPid !== null) {
    return awaitOtherSupervisor(paths, view.supervisorPid, timeoutMs);
  }
  if (view.manager !== null) {
    throw new UsageError(
      `Agent Manager is already running for this workspace (pid ${view.manager.pid}${view.manager.url ? `, ${view.manager.url}` : ''}) without a supervisor; \`agent-manager restart\` runs it detached and supervised`,
    );
  }
  // The secrets reach the supervisor (and through it the manager) in the environment, never on a
  // command line: see manager-launch.ts.
  const env =
    Object.keys(launch.env).length > 0
      ? { ...process.env, [SUPERVISOR_ENV_VARIABLE]: JSON.stringify(launch.env) }
      : process.env;
  const child = spawn(process.execPath, [SUPERVISOR_ENTRY, paths.root, ...launch.args], {
    cwd: paths.root,
    detached: true,
    env,
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  const outcome = await new Promise<SupervisorReport | { kind: 'exited'; code: number | null } | { kind: 'timeout' }>(
    (resolve) => {
      const timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
      child.once('message', (message: SupervisorReport) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, kind: 'exited' });
      });
    },
  );
  // From here on the supervisor lives on its own: nothing of ours keeps it, nor us.
  child.removeAllListeners();
  if (child.connected) {
    child.disconnect();
  }
  child.unref();
  switch (outcome.kind) {
    case 'running':
      return { alreadyRunning: false, state: outcome.state };
    case 'already-running':
      return awaitOtherSupervisor(paths, outcome.supervisorPid, timeoutMs);
    case 'failed':
      throw new UsageError(`Agent Manager did not start: ${outcome.reason}`);
    case 'exited':
      throw new UsageError(
        `Agent Manager did not start: its supervisor exited (code ${outcome.code}) before the manager was healthy; see \`agent-manager logs\``,
      );
    case 'timeout':
      throw new UsageError(
        `Agent Manager is not healthy after ${timeoutMs / 1000} s; it goes on starting in the background (supervisor pid ${child.pid}): see \`agent-manager status\` and \`agent-manager logs\``,
      );
  }
}

/**
 * What the last detached manager was started with, for `restart`: its arguments from the state
 * file, its secrets from their own file (or, recorded by an older version, from the arguments).
 */
export function lastLaunch(paths: WorkspacePaths, state: DaemonState | null): ManagerLaunch {
  const recorded = separateSecrets(state?.managerArgs ?? []);
  return { args: recorded.args, env: { ...recorded.env, ...readLaunchSecrets(daemonPaths(paths).secretsPath) } };
}

export interface StopOutcome {
  stopped: Array<{ what: 'manager' | 'supervisor'; pid: number }>;
}

/**
 * `stop`: SIGTERM to the supervisor, which stops its manager gracefully; without a supervisor
 * (killed, or a foreground manager), to the manager itself. Resolves once both are gone.
 */
export async function stopDaemon(paths: WorkspacePaths, timeoutMs: number): Promise<StopOutcome> {
  const view = inspectDaemon(paths);
  const targets: Array<{ what: 'manager' | 'supervisor'; pid: number; startTime: string | null }> = [];
  if (view.supervisorPid !== null) {
    targets.push({ pid: view.supervisorPid, startTime: processStartTime(view.supervisorPid), what: 'supervisor' });
  }
  if (view.manager !== null) {
    targets.push({ pid: view.manager.pid, startTime: processStartTime(view.manager.pid), what: 'manager' });
  }
  if (targets.length === 0) {
    return { stopped: [] };
  }
  const first = targets[0];
  try {
    process.kill(first.pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
      throw new UsageError(`cannot signal the ${first.what} (pid ${first.pid}): ${(err as Error).message}`);
    }
  }
  const alive = () => targets.filter((t) => isRunning(t.pid) && processStartTime(t.pid) === t.startTime);
  const gone = await waitFor(() => (alive().length === 0 ? true : null), timeoutMs);
  if (gone === null) {
    const left = alive()
      .map((t) => `${t.what} pid ${t.pid}`)
      .join(', ');
    throw new UsageError(
      `Agent Manager is still stopping after ${timeoutMs / 1000} s (${left}); see \`agent-manager logs\`, or wait and run \`agent-manager status\``,
    );
  }
  return { stopped: targets.map(({ pid, what }) => ({ pid, what })) };
}

/** The log `logs` prints: the supervisor's. */
export function daemonLogPath(paths: WorkspacePaths): string {
  return daemonPaths(paths).logPath;
}

export function logExists(paths: WorkspacePaths): boolean {
  return fs.existsSync(daemonLogPath(paths));
}
