import type { AttentionPerson, RequirementRunner } from '@libs/contracts';

import { personId } from '../person';

/** One runner of a board, as `am_runner` records it. */
export interface BoardRunner {
  id: string;
  host: string;
  personName: string;
  personEmail: string | null;
  pid: number;
  url: string | null;
  startedAt: string;
  /** Its heartbeat is younger than one lease period (and it did not stop). */
  online: boolean;
  /** It runs the once-per-board jobs: the online runner that took the leadership last. */
  leader: boolean;
}

/**
 * The board's runners as this process last read them (each heartbeat refreshes it, see
 * PostgresBoard): what a Requirement's `runner` shows. A Requirement's response is built from its
 * rows in many places (snapshots in events included); the runner's liveness is not a row of the
 * Requirement but a fact of the board at the time, so it is looked up here rather than loaded
 * with every Requirement. Empty off a board.
 */
const runners = new Map<string, RequirementRunner>();
const people = new Map<string, AttentionPerson>();

export function recordRunners(list: readonly BoardRunner[]): void {
  runners.clear();
  people.clear();
  for (const r of list) {
    runners.set(r.id, { host: r.host, id: r.id, online: r.online, person: r.personName });
    people.set(r.id, { id: personId(r.personName, r.personEmail), name: r.personName });
  }
}

/** The person a runner acts for (whose Requirements it runs), or null when this process has not heard of it. */
export function runnerPerson(id: string): AttentionPerson | null {
  return people.get(id) ?? null;
}

let onMiss: (() => void) | null = null;

/** What to do when a runner is asked for that this process has not heard of (read the board again). */
export function whenRunnerUnknown(listener: (() => void) | null): void {
  onMiss = listener;
}

/**
 * A Requirement's runner as shown; one this process has not heard of yet (it joined since the
 * last heartbeat) shows as offline and unknown, and the board is read again at once.
 */
export function runnerView(id: string | null | undefined): RequirementRunner | null {
  if (!id) {
    return null;
  }
  const known = runners.get(id);
  if (!known) {
    onMiss?.();
  }
  return known ?? { host: 'unknown', id, online: false, person: 'unknown' };
}
