/**
 * The spawner process (see spawner.ts): runs each `runBounded` call the manager sends and
 * answers with its process group, then its result. It ends, with every program it started,
 * when the manager's IPC channel closes.
 */
import { runBoundedHere } from './bounded-process';
import type { SpawnerReply, SpawnerRequest } from './spawner';

const running = new Set<number>();

const reply = (message: SpawnerReply) => {
  if (process.connected) {
    process.send?.(message);
  }
};

process.on('message', (request: SpawnerRequest) => {
  let pid: number | null = null;
  void runBoundedHere(request.command, request.args, request.options, (started) => {
    pid = started;
    running.add(started);
    reply({ id: request.id, pid: started });
  }).then((result) => {
    if (pid !== null) {
      running.delete(pid);
    }
    reply({ id: request.id, result });
  });
});

process.on('disconnect', () => {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exit(0);
});
