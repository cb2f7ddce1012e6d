import type { RunningManager } from '@server/manager';

/** What ends a running manager from outside. SIGHUP: the terminal it was started from closed. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const PARENT_POLL_MS = 500;

export interface StopSignalOptions {
  /**
   * Also stop when the process that started this one goes away (`npm start`: npm and its `sh`
   * die on a supervisor's SIGTERM without passing it on, which would leave the manager running
   * on its own under pid 1).
   */
  stopWithParent: boolean;
}

/**
 * Every way a supervisor or a person ends the manager leads to the one graceful stop: agent
 * runs ended, writes finished, streams closed, lock released, exit 0. Signals are handled for the
 * whole life of the process, so a second one (a process group's TERM arrives once per process of
 * an `npm start` tree, and supervisors repeat theirs) never falls through to the default action
 * that would kill the manager half-way. Only a second Ctrl+C forces a quick exit, which still
 * ends the agents and releases the lock. Installed before the manager starts: a signal during
 * start-up stops it as soon as it is up.
 */
export class StopSignals {
  private manager: RunningManager | null = null;
  private requested: string | null = null;
  private stopping = false;

  constructor(options: StopSignalOptions) {
    // Output goes to a terminal or pipe whose reader may be gone by now: never die of EPIPE.
    process.stdout.on('error', () => undefined);
    process.stderr.on('error', () => undefined);
    for (const signal of STOP_SIGNALS) {
      process.on(signal, () => this.request(signal));
    }
    if (options.stopWithParent) {
      const parent = process.ppid;
      setInterval(() => {
        if (process.ppid !== parent) {
          this.request('parent exited');
        }
      }, PARENT_POLL_MS).unref();
    }
  }

  /** The manager is up: a stop asked for during start-up begins now. */
  attach(manager: RunningManager): void {
    this.manager = manager;
    if (this.requested !== null) {
      this.stop(manager, this.requested);
    }
  }

  /** Start-up failed: nothing to stop; a signal now ends the process as usual. */
  detach(): void {
    for (const signal of STOP_SIGNALS) {
      process.removeAllListeners(signal);
    }
  }

  private request(reason: string): void {
    if (this.manager) {
      this.stop(this.manager, reason);
    } else {
      this.requested ??= reason;
    }
  }

  private stop(manager: RunningManager, reason: string): void {
    if (this.stopping) {
      if (reason === 'SIGINT') {
        manager.forceStop();
        process.exit(130);
      }
      return;
    }
    this.stopping = true;
    if (reason === 'SIGINT') {
      process.stderr.write('Stopping… (Ctrl+C again to force)\n');
    }
    manager.stop().then(
      // Everything is flushed and closed: exit rather than wait on a stray handle.
      () => process.exit(process.exitCode ?? 0),
      (err: unknown) => {
        process.stderr.write(`agent-manager: error while stopping: ${(err as Error).message}\n`);
        manager.forceStop();
        process.exit(1);
      },
    );
  }
}
