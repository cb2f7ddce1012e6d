import type { DaemonState } from './daemon-state';

/** What the supervisor tells the `start --detach` that spawned it, once, over the IPC channel. */
export type SupervisorReport =
  | { kind: 'running'; state: DaemonState }
  | { kind: 'failed'; reason: string }
  /** Another supervisor holds this workspace (a concurrent start): its pid. */
  | { kind: 'already-running'; supervisorPid: number };
