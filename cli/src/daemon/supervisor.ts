// The supervisor of a detached manager (`agent-manager start --detach`): a small process of its
// own, started detached by that command, which runs the manager in the foreground mode as its
// child, keeps its output in logs/daemon.log, records what it does in daemon.json, restarts a
// crashed manager with backoff and stops it gracefully on SIGTERM. See docs/decisions.md.
import 'reflect-metadata';

import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

import { ConfigurationService, overridesFromEnv } from '@server/core/configuration/configuration.service';
import { CONFIGURATION_DEFAULTS } from '@server/core/configuration/configuration.schema';
import { processStartTime } from '@server/core/process-table';
import { InstanceLock, InstanceLockedError } from '@server/core/workspace/instance-lock';
import { WorkspacePaths, codeFactoryHome, resolveWorkspace } from '@server/core/workspace/workspace';

import { nextCrashCount, restartDelayMs } from './backoff';
import { RotatingLog, parseLogSize } from './daemon-log';
import { DaemonState, daemonPaths, writeDaemonState } from './daemon-state';
import { takeSupervisorEnv, writeLaunchSecrets } from './manager-launch';
import type { SupervisorReport } from './supervisor-report';

const MANAGER_ENTRY = path.join(__dirname, '..', 'agent-manager.js');
const CRASHES_KEPT = 20;
const HEALTH_POLL_MS = 100;
const PIPE_DRAIN_MS = 1_000;
/** The banner's API line: the manager is listening and says where. */
const API_LINE = /API\s+(http:\/\/\S+)\/api/;

/**
 * Tells the `start --detach` that spawned us how the start went, then lets it go; it may be gone
 * already (interrupted), and a restarted manager has nobody to tell. Resolves once delivered.
 */
function report(message: SupervisorReport): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) {
      resolve();
      return;
    }
    process.send(message, () => {
      if (process.connected) {
        process.disconnect();
      }
      resolve();
    });
  });
}

/** The size at which daemon.log rotates: the configuration's `logMaxSize`, as for the manager's own log. */
function logMaxBytes(paths: WorkspacePaths, managerArgs: string[]): number {
  const configFlag = managerArgs.indexOf('--config');
  try {
    const configuration = new ConfigurationService(
      configFlag >= 0 ? managerArgs[configFlag + 1] : paths.defaultConfigPath,
      overridesFromEnv(process.env),
    );
    return parseLogSize(configuration.get('logMaxSize'));
  } catch {
    // An unreadable configuration is the manager's to report, in this very log.
    return parseLogSize(CONFIGURATION_DEFAULTS.logMaxSize);
  }
}

class Supervisor {
  private child: ChildProcess | null = null;
  private healthyAt: number | null = null;
  private consecutiveCrashes = 0;
  private stopRequested = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private lastError = '';
  private readonly state: DaemonState;

  constructor(
    private readonly paths: WorkspacePaths,
    private readonly managerArgs: string[],
    /** The secrets the manager gets in its environment (never on its command line). */
    private readonly managerEnv: Record<string, string>,
    private readonly lock: InstanceLock,
    private readonly log: RotatingLog,
    private readonly statePath: string,
    logPath: string,
  ) {
    this.state = {
      crashes: [],
      logPath,
      managerArgs,
      managerPid: null,
      managerStartTime: null,
      managerStartedAt: null,
      nextStartAt: null,
      reason: null,
      restarts: 0,
      startedAt: new Date().toISOString(),
      status: 'starting',
      supervisorPid: process.pid,
      supervisorStartTime: processStartTime(process.pid),
      url: null,
      workspace: paths.root,
    };
  }

  begin(): void {
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.on(signal, () => this.stop(signal));
    }
    this.log.note(`supervisor started (pid ${process.pid}) for ${this.paths.root}`);
    this.startManager();
  }

  private save(changes: Partial<DaemonState>): void {
    Object.assign(this.state, changes);
    writeDaemonState(this.statePath, this.state);
  }

  private startManager(): void {
    this.restartTimer = null;
    this.healthyAt = null;
    this.lastError = '';
    const child = spawn(
      process.execPath,
      [MANAGER_ENTRY, 'start', '--workspace', this.paths.root, ...this.managerArgs],
      {
        cwd: this.paths.root,
        env: { ...process.env, ...this.managerEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.child = child;
    this.save({
      managerPid: child.pid ?? null,
      managerStartTime: child.pid ? processStartTime(child.pid) : null,
      managerStartedAt: null,
      nextStartAt: null,
      url: null,
    });
    this.log.note(`manager starting (pid ${child.pid})`);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      this.log.write(chunk);
      if (this.healthyAt === null && out.length < 64 * 1024) {
        out += chunk.toString();
        const url = API_LINE.exec(out)?.[1];
        if (url) {
          out = '';
          void this.awaitHealthy(child, url);
        }
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.log.write(chunk);
      // The CLI's refusal is its last line on stderr ("agent-manager: cannot listen: …").
      const lines = chunk.toString().trim().split('\n');
      this.lastError = lines[lines.length - 1] ?? this.lastError;
    });
    child.on('error', (err) => {
      this.lastError = err.message;
    });
    child.on('exit', (code, signal) => {
      // Its last words (the reason a start failed) may still be in the pipes; but a process it left
      // behind holding them open (an agent's tool) must not delay the restart.
      const drained = new Promise((resolve) => child.once('close', resolve));
      void Promise.race([drained, new Promise((resolve) => setTimeout(resolve, PIPE_DRAIN_MS))]).then(() =>
        this.managerExited(child, code, signal),
      );
    });
  }

  /** The banner says where it listens; it is healthy once /api/health answers there. */
  private async awaitHealthy(child: ChildProcess, url: string): Promise<void> {
    while (this.child === child && child.exitCode === null && child.signalCode === null) {
      try {
        const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(5_000) });
        if (response.ok && ((await response.json()) as { ok?: boolean }).ok === true) {
          break;
        }
      } catch {
        // Not answering yet.
      }
      await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
    }
    if (this.child !== child || child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    this.healthyAt = Date.now();
    this.save({
      managerStartedAt: new Date(this.healthyAt).toISOString(),
      reason: null,
      status: this.stopRequested ? 'stopping' : 'running',
      url,
    });
    this.log.note(`manager healthy (pid ${child.pid}) at ${url}`);
    void report({ kind: 'running', state: this.state });
  }

  private managerExited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) {
      return;
    }
    this.child = null;
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    this.log.note(`manager (pid ${child.pid}) ended with ${how}`);
    if (this.stopRequested) {
      this.finish('stopped', `stopped on request`, 0);
      return;
    }
    if (this.healthyAt === null) {
      // It never got healthy: a port in use, a bad configuration, a locked workspace. Starting it
      // again would fail the same way, so say why and leave it to the owner.
      const reason = `the manager failed to start (${how})${this.lastError ? `: ${this.lastError.replace(/^agent-manager: /, '')}` : ''}`;
      // The dead manager's pid goes in the same write: whoever reads "failed" (the CLI the report
      // answers, `status`) must never see it beside a pid.
      this.save({ managerPid: null, managerStartTime: null, reason, status: 'failed', url: null });
      void report({ kind: 'failed', reason }).then(() => this.finish('failed', reason, 1));
      return;
    }
    if (code === 0 && signal === null) {
      // A graceful stop asked of the manager itself (a SIGTERM sent to its pid): respected.
      this.finish('stopped', 'the manager stopped by itself (exit code 0)', 0);
      return;
    }
    const uptimeMs = Date.now() - this.healthyAt;
    this.consecutiveCrashes = nextCrashCount(this.consecutiveCrashes, uptimeMs);
    const delayMs = restartDelayMs(this.consecutiveCrashes);
    const crash = { at: new Date().toISOString(), delayMs, exitCode: code, signal, uptimeMs };
    this.save({
      crashes: [...this.state.crashes, crash].slice(-CRASHES_KEPT),
      managerPid: null,
      managerStartTime: null,
      nextStartAt: new Date(Date.now() + delayMs).toISOString(),
      reason: `the manager crashed (${how})`,
      status: 'restarting',
      url: null,
    });
    this.log.note(
      `manager crashed after ${Math.round(uptimeMs / 1000)} s up; restarting in ${delayMs / 1000} s (crash ${this.consecutiveCrashes} in a row)`,
    );
    this.restartTimer = setTimeout(() => {
      this.save({ restarts: this.state.restarts + 1, status: 'starting' });
      this.startManager();
    }, delayMs);
  }

  private stop(signal: string): void {
    if (this.stopRequested) {
      return;
    }
    this.stopRequested = true;
    this.log.note(`${signal}: stopping`);
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.finish('stopped', 'stopped on request', 0);
      return;
    }
    this.save({ status: 'stopping' });
    // The manager's own graceful stop (runs ended, writes finished, lock released); one still
    // starting stops as soon as it is up.
    this.child?.kill('SIGTERM');
  }

  private finish(status: 'stopped' | 'failed', reason: string, exitCode: number): void {
    this.save({ managerPid: null, managerStartTime: null, nextStartAt: null, reason, status, url: null });
    this.log.note(`supervisor exiting: ${reason}`);
    this.log.close();
    this.lock.release();
    process.exit(exitCode);
  }
}

function main(): void {
  const [workspace, ...managerArgs] = process.argv.slice(2);
  const managerEnv = takeSupervisorEnv(process.env);
  const paths = resolveWorkspace(workspace ?? process.cwd(), codeFactoryHome());
  const daemon = daemonPaths(paths);
  // One supervisor per workspace: of two concurrent `start --detach`, the second finds the first.
  const lock = new InstanceLock(daemon.supervisorLockPath);
  try {
    lock.acquire();
  } catch (err) {
    if (err instanceof InstanceLockedError) {
      void report({ kind: 'already-running', supervisorPid: err.holder.pid });
      return;
    }
    throw err;
  }
  // Ours now: what `restart` will start the manager with again.
  writeLaunchSecrets(daemon.secretsPath, managerEnv);
  const log = new RotatingLog(daemon.logPath, logMaxBytes(paths, managerArgs));
  // A bug here must leave a trace where the owner looks; the manager, if up, runs on unsupervised
  // (as after a kill -9 of this process), and `status` says so.
  process.on('uncaughtException', (err) => {
    log.note(`supervisor failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
  new Supervisor(paths, managerArgs, managerEnv, lock, log, daemon.statePath, daemon.logPath).begin();
}

// Nobody reads this process's stdio (it is /dev/null): a failure is reported to the parent, if
// it still listens, and the exit code is 1.
try {
  main();
} catch (err) {
  process.exitCode = 1;
  void report({ kind: 'failed', reason: `the supervisor failed: ${(err as Error).message}` });
}
