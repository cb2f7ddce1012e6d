import fs from 'node:fs';
import type { Readable } from 'node:stream';

import { spawner } from '../core/process/spawner';
import { processInfo } from '../core/process-table';
import { findExecutable } from './executable';
import { RUN_MARKER_VARIABLE, killRunTree } from './process-tree';

export interface ProcessSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  stdin: string;
  /** Unique per run: put in the environment of every process of the run. */
  marker: string;
  /** No output for this long ends the run as timed out; output renews the window. */
  inactivityTimeoutMs: number;
  /** However chatty, the run ends as timed out after this long (reviewers); none when absent. */
  maxDurationMs?: number;
  /** Longer stdout lines are cut to this many bytes (the rest of the line is dropped). */
  maxLineBytes?: number;
  /** Each complete stdout line, in order. `truncatedFrom` is the original size of a cut line. */
  onLine(line: string, truncatedFrom?: number): void;
}

export type ProcessEndReason = 'exited' | 'interrupted' | 'timed_out' | 'spawn_failed';

export interface ProcessEnd {
  reason: ProcessEndReason;
  code: number | null;
  signal: string | null;
  /** The last few KiB of stderr (for the error message; never the whole stream). */
  stderr: string;
}

export interface RunningProcess {
  pid: number | null;
  /** Process group and kernel start time, recorded with the run for startup reconciliation. */
  pgid: number | null;
  startTime: string | null;
  /** Resolves when the process has exited and no process of the run is left. */
  finished: Promise<ProcessEnd>;
  /** Ends the whole tree (SIGTERM, SIGKILL after 2 s); `finished` then says `interrupted`. */
  interrupt(): Promise<ProcessEnd>;
}

const DEFAULT_MAX_LINE = 1024 * 1024;
/**
 * Agents run below the manager's CPU priority, so twenty CLIs starting on two cores cannot
 * starve the event loop that serves the person and the other runs (p99 delay 335 → 102 ms in
 * `fleet` at Codex 20). Both knobs the kernel has: the process's niceness (through `nice`, so
 * every process of the run inherits it from the start), and, because Linux schedules each
 * session as one group when autogroup is on (as on Debian), the run's session's group too.
 */
const AGENT_NICENESS = 10;
const NICE = ['/usr/bin/nice', '/bin/nice'].find((candidate) => fs.existsSync(candidate));
const STDERR_KEEP = 8 * 1024;
/** How long a CLI that has exited may keep its pipes open (what it left behind) before that is ended. */
const EXIT_DRAIN_MS = 1000;

/**
 * Runs one agent CLI: no shell, in the workspace, in its own process group, prompt on stdin,
 * stdout read as lines (robust to partial, huge and garbage lines), stderr kept as a bounded
 * tail. The run ends only when the CLI and every process it started are gone.
 */
export async function runProcess(spec: ProcessSpec): Promise<RunningProcess> {
  const maxLine = spec.maxLineBytes ?? DEFAULT_MAX_LINE;
  // A program that is not there is left to fail as itself (spawn_failed, ENOENT), not as `nice`'s exit 127.
  const [command, args] =
    NICE && findExecutable(spec.command, spec.env.PATH ?? '', spec.cwd)
      ? [NICE, ['-n', String(AGENT_NICENESS), spec.command, ...spec.args]]
      : [spec.command, spec.args];
  // Started by the spawner process: a spawn here would hold the event loop until the CLI exec'd.
  const child = await spawner.start(command, args, {
    cwd: spec.cwd,
    env: { ...spec.env, [RUN_MARKER_VARIABLE]: spec.marker },
  });
  const pid = child.pid ?? null;
  if (pid !== null) {
    lowerSessionPriority(pid);
  }
  const info = pid !== null ? processInfo(pid) : null;

  let stopReason: ProcessEndReason | null = null;
  let stopping: Promise<void> | null = null;
  let stderr = '';
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let droppingFrom = 0; // > 0 while the rest of an over-long line is being skipped

  let timer: NodeJS.Timeout | undefined;
  const armTimer = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void stop('timed_out'), spec.inactivityTimeoutMs);
  };

  const emit = (line: Buffer, truncatedFrom?: number) => {
    const text = line.toString('utf8').replace(/\r$/, '');
    try {
      spec.onLine(text, truncatedFrom);
    } catch {
      // a consumer's bug must not kill the reader
    }
  };

  const onStdout = (chunk: Buffer) => {
    armTimer();
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (droppingFrom > 0) {
        emit(Buffer.concat(pending), droppingFrom + piece.length);
      } else if (pendingBytes + piece.length > maxLine) {
        const line = Buffer.concat([...pending, piece]);
        emit(line.subarray(0, maxLine), line.length);
      } else {
        emit(pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]));
      }
      pending = [];
      pendingBytes = 0;
      droppingFrom = 0;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) {
      return;
    }
    if (droppingFrom > 0) {
      droppingFrom += rest.length;
    } else if (pendingBytes + rest.length > maxLine) {
      // Keep the first maxLine bytes of this line, count and drop the rest as it streams in.
      const kept = Buffer.concat([...pending, rest]);
      pending = [kept.subarray(0, maxLine)];
      droppingFrom = kept.length;
      pendingBytes = maxLine;
    } else {
      pending.push(Buffer.from(rest));
      pendingBytes += rest.length;
    }
  };

  const deadline =
    spec.maxDurationMs !== undefined ? setTimeout(() => void stop('timed_out'), spec.maxDurationMs) : undefined;

  const stop = (reason: ProcessEndReason): Promise<void> => {
    if (!stopping) {
      stopReason = reason;
      clearTimeout(timer);
      clearTimeout(deadline);
      stopping = killRunTree(spec.marker, pid);
    }
    return stopping;
  };

  const finished = new Promise<ProcessEnd>((resolve) => {
    child.stdout.on('data', onStdout);
    child.stderr.on('data', (chunk: Buffer) => {
      armTimer();
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
    });
    child.stdin.on('error', () => undefined); // the CLI may exit before reading all input
    // The end waits for the pipes too, and what the CLI left behind may hold them: the sandbox's
    // init (which lives on while any orphan does) or a tool command that inherited stdout.
    // Once the CLI itself has exited and its last output had time to drain, end the rest.
    let drained: NodeJS.Timeout | undefined;
    void child.exited.then(() => {
      drained = setTimeout(
        () => void (stopping ?? killRunTree(spec.marker, null)).catch(() => undefined),
        EXIT_DRAIN_MS,
      );
    });
    void Promise.all([child.exited, closed(child.stdout), closed(child.stderr)]).then(([exit]) => {
      clearTimeout(drained);
      clearTimeout(timer);
      clearTimeout(deadline);
      if (pendingBytes > 0) {
        emit(Buffer.concat(pending), droppingFrom || undefined);
      }
      const spawnFailed = exit.error !== null && pid === null;
      // A finished CLI may leave tool processes behind (Codex does): end them too.
      const cleanup = stopping ?? killRunTree(spec.marker, null);
      void cleanup
        .catch(() => undefined)
        .then(() =>
          resolve({
            code: exit.code,
            reason: spawnFailed ? 'spawn_failed' : (stopReason ?? 'exited'),
            signal: exit.signal,
            stderr: exit.error !== null ? `${exit.error}\n${stderr}` : stderr,
          }),
        );
    });
  });

  armTimer();
  child.stdin.end(spec.stdin);

  return {
    finished,
    interrupt: async () => {
      await stop('interrupted');
      return finished;
    },
    pgid: info?.pgid ?? pid,
    pid,
    startTime: info?.startTime ?? null,
  };
}

/** The autogroup of the run's session (`detached` made one for it) gets the agents' niceness; absent or refused, nothing changes. */
function lowerSessionPriority(pid: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(AGENT_NICENESS));
  } catch {
    // no autogroup in this kernel, or the run has already ended
  }
}

/** Resolves when the stream has closed (at once when it already has). */
function closed(stream: Readable): Promise<void> {
  return stream.closed || stream.destroyed
    ? Promise.resolve()
    : new Promise((resolve) => stream.once('close', () => resolve()));
}
