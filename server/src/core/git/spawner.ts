import { ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import type { BoundedOptions, BoundedResult } from './bounded-process';

/** What the manager asks the spawner process: one `runBounded` call. */
export interface SpawnerRequest {
  id: number;
  command: string;
  args: readonly string[];
  options: BoundedOptions & { env: NodeJS.ProcessEnv };
}

/** What it answers: the child's process group as soon as it exists, then the result. */
export type SpawnerReply = { id: number; pid: number } | { id: number; result: BoundedResult };

interface Pending {
  resolve(result: BoundedResult): void;
  pid: number | null;
  guard: NodeJS.Timeout;
}

/** The compiled entry; absent when the sources run unbuilt (unit tests), and then nothing is delegated. */
const ENTRY = path.join(__dirname, 'spawner-process.js');
/** A spawner that does not answer within the call's own limit plus this is taken as stuck. */
const GRACE_MS = 5_000;

/**
 * Starts the manager's short-lived programs (git, du, setup commands) from one small helper
 * process instead of the manager's event loop. Node's `spawn` is synchronous until the child
 * has exec'd: with twenty agents starting on two cores that wait was a quarter of the main
 * thread (tens of milliseconds per git command), and a worker thread does not help enough
 * because a fork of the manager's large address space stalls every thread of it. The helper is
 * small, in its own process group (a terminal's Ctrl+C is for the manager, which then ends it),
 * leaves with the manager (its IPC channel closes) and takes its in-flight programs with it. If
 * it dies, the calls it had are answered as killed (their process groups are killed here) and
 * the next call starts a new one.
 */
class Spawner {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly available = fs.existsSync(ENTRY);

  /** The call's result, or null when there is no spawner here (the caller then spawns itself). */
  run(command: string, args: readonly string[], options: BoundedOptions): Promise<BoundedResult> | null {
    const child = this.available ? this.ensureChild() : null;
    if (!child) {
      return null;
    }
    const id = this.nextId++;
    // A plain copy: process.env is an exotic object the structured clone refuses.
    const request: SpawnerRequest = { args: [...args], command, id, options: { ...options, env: { ...(options.env ?? process.env) } } };
    return new Promise((resolve) => {
      const guard = setTimeout(() => this.settle(id, lost('the process spawner did not answer in time', true)), options.timeoutMs + GRACE_MS);
      this.pending.set(id, { guard, pid: null, resolve });
      this.child?.channel?.ref();
      const refused = (err: Error | null) => err && this.settle(id, lost(`the process spawner could not be asked: ${err.message}`, false));
      try {
        child.send(request, refused);
      } catch (err) {
        refused(err as Error);
      }
    });
  }

  /** The spawner's process id (tests and operators), or null when none is running. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private ensureChild(): ChildProcess | null {
    if (this.child) {
      return this.child;
    }
    let child: ChildProcess;
    try {
      // Only what Node itself needs: every request carries the environment its program gets.
      child = fork(ENTRY, [], {
        detached: true,
        env: { PATH: process.env.PATH ?? '' },
        execArgv: [],
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
    } catch {
      return null;
    }
    child.unref();
    child.channel?.unref();
    child.on('message', (reply: SpawnerReply) => {
      if ('pid' in reply) {
        const entry = this.pending.get(reply.id);
        if (entry) {
          entry.pid = reply.pid;
        }
      } else {
        const stdout = reply.result.stdout as Uint8Array;
        this.settle(reply.id, { ...reply.result, stdout: Buffer.isBuffer(stdout) ? stdout : Buffer.from(stdout.buffer, stdout.byteOffset, stdout.byteLength) });
      }
    });
    const gone = () => {
      if (this.child !== child) {
        return;
      }
      this.child = null;
      for (const id of [...this.pending.keys()]) {
        this.settle(id, lost('the process spawner exited', true));
      }
    };
    child.on('exit', gone);
    child.on('error', gone);
    this.child = child;
    return child;
  }

  private settle(id: number, result: BoundedResult): void {
    const entry = this.pending.get(id);
    if (!entry) {
      return;
    }
    this.pending.delete(id);
    clearTimeout(entry.guard);
    if (result.error !== null && entry.pid !== null) {
      killGroup(entry.pid); // started, but its answer is lost: it must not go on unwatched
    }
    if (this.pending.size === 0) {
      this.child?.channel?.unref();
    }
    entry.resolve(result);
  }
}

function lost(error: string, killed: boolean): BoundedResult {
  return { code: null, error, signal: killed ? 'SIGKILL' : null, stderr: '', stdout: Buffer.alloc(0), timedOut: false, truncated: false };
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export const spawner = new Spawner();
