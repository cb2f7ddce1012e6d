/**
 * The spawner process (see spawner.ts): starts each program the manager asks for and answers
 * with its process group, then either its bounded result or, for a streaming program, its three
 * pipes (handed over, so the manager reads and writes them itself) and its exit. When the
 * manager's IPC channel closes it leaves; what it started runs on, as it would have had the
 * manager started it.
 */
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';

import { runBoundedHere } from './bounded-process';
import type { SpawnerReply, SpawnerRequest } from './spawner';

const reply = (message: SpawnerReply, handle?: Socket) => {
  if (process.connected) {
    process.send?.(message, handle);
  }
};

process.on('message', (request: SpawnerRequest) => {
  if (request.kind === 'bounded') {
    void runBoundedHere(request.command, request.args, request.options, (pid) => reply({ id: request.id, pid })).then(
      (result) => reply({ id: request.id, result }),
    );
    return;
  }
  const child = spawn(request.command, request.args, {
    cwd: request.options.cwd,
    detached: true,
    env: request.options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) {
    child.once('error', (err) => reply({ failed: err.message, id: request.id }));
    return;
  }
  child.on('error', () => undefined); // its pipes are the manager's now
  const [stdin, stdout, stderr] = [child.stdin, child.stdout, child.stderr] as unknown as Socket[];
  // The pipes are the manager's to read: nothing may be read here meanwhile (a handle waits for
  // the previous one's acknowledgement before it is sent, and what this side had read would be
  // lost with it), and Node must not drain or close them here when the program exits first.
  for (const pipe of [stdout, stderr]) {
    (pipe as unknown as { _handle?: { readStop?(): void } })._handle?.readStop?.();
  }
  Object.assign(child, { stderr: null, stdin: null, stdout: null });
  (child.stdio as unknown as unknown[]).fill(null);
  reply({ id: request.id, pid: child.pid });
  // Each handle is closed here once sent: the manager holds the only copies.
  reply({ id: request.id, stream: 'stdin' }, stdin);
  reply({ id: request.id, stream: 'stdout' }, stdout);
  reply({ id: request.id, stream: 'stderr' }, stderr);
  child.on('exit', (code, signal) => reply({ exited: { code, signal }, id: request.id }));
});

// The manager's own hands: a signal meant for the manager's side is the manager's to act on, and
// this process leaves when it does (below). Killed outright, the manager starts another.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(signal, () => undefined);
}

// Without the manager there is no one to answer: leave at once. What runs goes on as an orphan,
// as it did when the manager started it itself: a git moving a checkout must not be killed half
// way (it would leave the index locked), and an agent is found again by its run's marker.
process.on('disconnect', () => process.exit(0));
