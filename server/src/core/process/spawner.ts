import { ChildProcess, fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';

import { processInfo } from '../process-table';
import type { BoundedOptions, BoundedResult } from './bounded-options';

/** How a streaming program ended; `error` when it could not be started, or its exit status was lost. */
export interface StreamingExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error: string | null;
}

/** A long-lived program with its three pipes (an agent CLI), started detached in its own session. */
export interface StreamingChild {
  /** Null when it could not be started (`exited` then says why). */
  pid: number | null;
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** Resolves when the process has exited (its pipes may outlive it). */
  exited: Promise<StreamingExit>;
}

export interface StreamingOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** What the manager asks the spawner process: one `runBounded` call, or one streaming program. */
export type SpawnerRequest =
  | {
      id: number;
      kind: 'bounded';
      command: string;
      args: readonly string[];
      options: BoundedOptions & { env: NodeJS.ProcessEnv };
    }
  | { id: number; kind: 'streaming'; command: string; args: readonly string[]; options: StreamingOptions };

/**
 * What it answers: the program's process id (its process group) as soon as it exists; for a
 * streaming program its three pipes (each message carries one as its handle) and its exit; for
 * a bounded call the result; `failed` when the program could not be started.
 */
export type SpawnerReply =
  | { id: number; pid: number }
  | { id: number; result: BoundedResult }
  | { id: number; stream: 'stdin' | 'stdout' | 'stderr' }
  | { id: number; exited: { code: number | null; signal: NodeJS.Signals | null } }
  | { id: number; failed: string };

interface PendingBounded {
  kind: 'bounded';
  resolve(result: BoundedResult): void;
  pid: number | null;
  guard: NodeJS.Timeout;
  /** When its time limit runs out (the spawner's own timer goes with the spawner). */
  deadline: number;
}

interface PendingStreaming {
  kind: 'streaming';
  pid: number | null;
  pipes: Partial<Record<'stdin' | 'stdout' | 'stderr', Socket>>;
  started(child: Omit<StreamingChild, 'exited'>): void;
  exit(result: StreamingExit): void;
  /** Its pipes reached the caller: from here on it is the caller's to read. */
  delivered: boolean;
  guard: NodeJS.Timeout;
}

/**
 * The compiled entry. When the sources run, nothing is delegated (unit tests), unless the test
 * tiers that start managers in their own process ask for the build's helper
 * (`CODE_FACTORY_TEST_BUILT_SPAWNER`, set by test/support/test-environment.js after `npm test`
 * built it): a test process holds far more memory than a manager, so spawning from it stalls
 * longer still.
 */
const ENTRY = ((): string => {
  const beside = path.join(__dirname, 'spawner-process.js');
  if (!__filename.endsWith('.ts') || process.env.CODE_FACTORY_TEST_BUILT_SPAWNER !== '1') {
    return beside;
  }
  const root = path.resolve(__dirname, '..', '..', '..', '..');
  const built = path.join(root, 'dist', path.relative(root, __dirname), 'spawner-process.js');
  return fs.existsSync(built) ? built : beside;
})();
/** A spawner that does not answer a bounded call within the call's own limit plus this is taken as stuck. */
const GRACE_MS = 5_000;
/** A streaming program whose pipes have not reached the manager by then is given up (and killed). */
const START_TIMEOUT_MS = 60_000;
/** How often a streaming program whose spawner died is looked for, until it is gone. */
const ORPHAN_POLL_MS = 500;

/**
 * Starts the manager's programs (git, du, setup commands, the agents' CLIs) from one small
 * helper process instead of the manager's event loop. Node's `spawn` is synchronous until the
 * child has exec'd: with twenty agents starting on two cores that wait was a quarter of the
 * main thread (tens of milliseconds per git command, up to a second per agent), and a worker
 * thread does not help enough because a fork of the manager's large address space stalls
 * every thread of it. The helper is small and in its own process group (a terminal's Ctrl+C
 * is for the manager, which then ends it); it leaves when the manager's IPC channel closes.
 *
 * What it started runs on if the manager goes, as it did when the manager started it itself (a
 * git moving a checkout must not stop half way; an agent is found again by its run's marker).
 * If the helper dies, a bounded call ends when its program does (or at its time limit, killed
 * as before) and is answered as lost, a streaming program's exit is reported once it is gone
 * (its status lost), and the next call starts a new helper.
 */
class Spawner {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, PendingBounded | PendingStreaming>();
  private nextId = 1;
  private readonly available = fs.existsSync(ENTRY);

  /** The call's result, or null when there is no spawner here (the caller then spawns itself). */
  run(command: string, args: readonly string[], options: BoundedOptions): Promise<BoundedResult> | null {
    const child = this.available ? this.ensureChild() : null;
    if (!child) {
      return null;
    }
    const id = this.nextId++;
    return new Promise((resolve) => {
      const guard = setTimeout(
        () => this.settle(id, lost('the process spawner did not answer in time', true)),
        options.timeoutMs + GRACE_MS,
      );
      this.pending.set(id, { deadline: Date.now() + options.timeoutMs, guard, kind: 'bounded', pid: null, resolve });
      // A plain copy: process.env is an exotic object the structured clone refuses.
      this.ask(child, {
        args: [...args],
        command,
        id,
        kind: 'bounded',
        options: { ...options, env: { ...(options.env ?? process.env) } },
      });
    });
  }

  /** Starts a long-lived program with its pipes (here when there is no spawner). */
  start(command: string, args: readonly string[], options: StreamingOptions): Promise<StreamingChild> {
    const child = this.available ? this.ensureChild() : null;
    if (!child) {
      return Promise.resolve(spawnHere(command, args, options));
    }
    const id = this.nextId++;
    return new Promise((started) => {
      let exit: (result: StreamingExit) => void = () => undefined;
      const exited = new Promise<StreamingExit>((resolve) => (exit = resolve));
      this.pending.set(id, {
        delivered: false,
        exit,
        guard: setTimeout(() => this.fail(id, 'the process spawner did not start it in time'), START_TIMEOUT_MS),
        kind: 'streaming',
        pid: null,
        pipes: {},
        started: (streaming) => started({ ...streaming, exited }),
      });
      this.ask(child, {
        args: [...args],
        command,
        id,
        kind: 'streaming',
        options: { cwd: options.cwd, env: { ...options.env } },
      });
    });
  }

  /** The spawner's process id (tests and operators), or null when none is running. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private ask(child: ChildProcess, request: SpawnerRequest): void {
    this.child?.channel?.ref();
    const refused = (err: Error | null) =>
      err && this.fail(request.id, `the process spawner could not be asked: ${err.message}`);
    try {
      child.send(request, refused);
    } catch (err) {
      refused(err as Error);
    }
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
    child.on('message', (reply: SpawnerReply, handle?: Socket) => this.receive(reply, handle));
    const gone = () => {
      if (this.child !== child) {
        return;
      }
      this.child = null;
      for (const id of [...this.pending.keys()]) {
        this.orphan(id);
      }
    };
    child.on('exit', gone);
    child.on('error', gone);
    this.child = child;
    return child;
  }

  private receive(reply: SpawnerReply, handle: Socket | undefined): void {
    const entry = this.pending.get(reply.id);
    if (!entry) {
      handle?.destroy();
      return;
    }
    if ('pid' in reply) {
      entry.pid = reply.pid;
    } else if ('result' in reply && entry.kind === 'bounded') {
      const stdout = reply.result.stdout as Uint8Array;
      this.settle(reply.id, {
        ...reply.result,
        stdout: Buffer.isBuffer(stdout) ? stdout : Buffer.from(stdout.buffer, stdout.byteOffset, stdout.byteLength),
      });
    } else if ('stream' in reply && entry.kind === 'streaming' && handle) {
      entry.pipes[reply.stream] = handle;
      const { stdin, stdout, stderr } = entry.pipes;
      if (stdin && stdout && stderr && entry.pid !== null) {
        clearTimeout(entry.guard);
        entry.delivered = true;
        entry.started({ pid: entry.pid, stderr, stdin, stdout });
      }
    } else if ('exited' in reply && entry.kind === 'streaming') {
      this.pending.delete(reply.id);
      entry.exit({ ...reply.exited, error: null });
      this.unrefWhenIdle();
    } else if ('failed' in reply) {
      this.fail(reply.id, reply.failed);
    }
  }

  /** The program could not be started (or asked for). */
  private fail(id: number, error: string): void {
    const entry = this.pending.get(id);
    if (entry?.kind === 'bounded') {
      this.settle(id, lost(error, false));
    } else if (entry) {
      this.pending.delete(id);
      clearTimeout(entry.guard);
      if (!entry.delivered) {
        // Whatever of it exists must not run on unread.
        if (entry.pid !== null) {
          killGroup(entry.pid);
        }
        for (const pipe of Object.values(entry.pipes)) {
          pipe?.destroy();
        }
        entry.started(notStarted());
        entry.exit({ code: null, error, signal: null });
      }
      this.unrefWhenIdle();
    }
  }

  /** The spawner died with this call in flight. */
  private orphan(id: number): void {
    const entry = this.pending.get(id);
    if (entry?.kind === 'bounded') {
      // Not killed early: a git moving a checkout must not stop half way (the index would stay
      // locked). Its answer is lost; the call ends when it does, or at its time limit as before.
      const pid = entry.pid;
      clearTimeout(entry.guard);
      const poll = setInterval(() => {
        const info = pid === null ? null : processInfo(pid);
        const gone = !info || info.state === 'Z';
        if (gone || Date.now() > entry.deadline) {
          clearInterval(poll);
          if (gone) {
            entry.pid = null; // nothing left to kill (its number may be another's by now)
          }
          this.settle(id, lost('the process spawner exited', !gone));
        }
      }, ORPHAN_POLL_MS);
      return;
    }
    if (!entry) {
      return;
    }
    if (!entry.delivered || entry.pid === null) {
      this.fail(id, 'the process spawner exited while starting it'); // nothing can read it: it is ended
      return;
    }
    // It runs on, its pipes are ours: its end is when it is gone, with its status lost.
    const pid = entry.pid;
    const poll = setInterval(() => {
      const info = processInfo(pid);
      if (!info || info.state === 'Z') {
        clearInterval(poll);
        this.pending.delete(id);
        entry.exit({ code: null, error: 'its exit status was lost with the process spawner', signal: null });
      }
    }, ORPHAN_POLL_MS);
  }

  private settle(id: number, result: BoundedResult): void {
    const entry = this.pending.get(id);
    if (entry?.kind !== 'bounded') {
      return;
    }
    this.pending.delete(id);
    clearTimeout(entry.guard);
    if (result.error !== null && entry.pid !== null) {
      killGroup(entry.pid); // started, its answer lost, its time up (or already gone): it must not go on unwatched
    }
    this.unrefWhenIdle();
    entry.resolve(result);
  }

  /**
   * Lets the helper go when nothing is pending, as the manager's exit would: a manager stops (in a
   * test's own process, that process lives on), and a later call starts a helper again.
   */
  release(): void {
    const child = this.child;
    if (!child || this.pending.size > 0) {
      return;
    }
    this.child = null;
    child.disconnect();
  }

  private unrefWhenIdle(): void {
    if (this.pending.size === 0) {
      this.child?.channel?.unref();
    }
  }
}

/** `start` in this process (no spawner). */
function spawnHere(command: string, args: readonly string[], options: StreamingOptions): StreamingChild {
  const child = spawn(command, args, {
    cwd: options.cwd,
    detached: true,
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<StreamingExit>((resolve) => {
    child.once('error', (err) => resolve({ code: null, error: err.message, signal: null }));
    child.once('exit', (code, signal) => resolve({ code, error: null, signal }));
  });
  return { exited, pid: child.pid ?? null, stderr: child.stderr, stdin: child.stdin, stdout: child.stdout };
}

/** The pipes of a program that never started: already closed. */
function notStarted(): Omit<StreamingChild, 'exited'> {
  const closed = <T extends Readable | Writable>(stream: T): T => stream.destroy() as T;
  return {
    pid: null,
    stderr: closed(new PassThrough()),
    stdin: closed(new PassThrough()),
    stdout: closed(new PassThrough()),
  };
}

function lost(error: string, killed: boolean): BoundedResult {
  return {
    code: null,
    error,
    signal: killed ? 'SIGKILL' : null,
    stderr: '',
    stdout: Buffer.alloc(0),
    timedOut: false,
    truncated: false,
  };
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export const spawner = new Spawner();
