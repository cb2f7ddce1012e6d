import { spawn } from 'node:child_process';

import type { BoundedOptions, BoundedResult } from './bounded-options';
import { spawner } from './spawner';

export type { BoundedOptions, BoundedResult } from './bounded-options';

/**
 * Runs a program without a shell, in its own process group, with a time limit and bounded
 * output: whatever a repository holds (a 2 GB diff, a setup command that never ends) costs at
 * most `maxBytes` of memory and `timeoutMs` of time.
 *
 * The program is started by the spawner process when there is one (see spawner.ts): a
 * `spawn` holds its caller's thread until the child has exec'd, which on a busy machine is
 * tens of milliseconds each, and the manager's event loop must not pay that per git command.
 */
export function runBounded(command: string, args: readonly string[], options: BoundedOptions): Promise<BoundedResult> {
  return spawner.run(command, args, options) ?? runBoundedHere(command, args, options);
}

/** `runBounded` in this process; `onSpawn` learns the process group as soon as it exists. */
export function runBoundedHere(
  command: string,
  args: readonly string[],
  options: BoundedOptions,
  onSpawn?: (pid: number) => void,
): Promise<BoundedResult> {
  return new Promise((resolve) => {
    const maxErrorBytes = options.maxErrorBytes ?? 8192;
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let truncated = false;
    let timedOut = false;
    let settled = false;
    const child = spawn(command, args, {
      cwd: options.cwd,
      detached: true,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid !== undefined) {
      onSpawn?.(child.pid);
    }
    const killGroup = () => {
      try {
        if (child.pid !== undefined) {
          process.kill(-child.pid, 'SIGKILL');
        }
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const keep = (chunk: Buffer) => {
      if (truncated) {
        return;
      }
      const room = options.maxBytes - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size = options.maxBytes;
        truncated = true;
        if (!options.keepRunningWhenCut) {
          killGroup();
        }
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', (chunk: Buffer) => {
      if (options.mergeOutput) {
        keep(chunk);
      } else {
        stderr = (stderr + chunk.toString('utf8')).slice(-maxErrorBytes);
      }
    });
    const done = (result: Pick<BoundedResult, 'code' | 'signal' | 'error'>) => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, stderr, stdout: Buffer.concat(chunks), timedOut, truncated });
    };
    child.on('error', (err) => done({ code: null, error: err.message, signal: null }));
    child.on('close', (code, signal) => done({ code, error: null, signal }));
  });
}
