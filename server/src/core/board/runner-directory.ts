import type { RequirementRunner } from '@libs/contracts';

import type { BoardRunner } from '../database/postgres/postgres-board';

/**
 * The board's runners as this process last read them (each heartbeat refreshes it, see
 * PostgresBoard): what a Requirement's `runner` shows. A Requirement's response is built from its
 * rows in many places (snapshots in events included); the runner's liveness is not a row of the
 * Requirement but a fact of the board at the time, so it is looked up here rather than loaded
 * with every Requirement. Empty off a board.
 */
const runners = new Map<string, RequirementRunner>();

export function recordRunners(list: readonly BoardRunner[]): void {
  runners.clear();
  for (const r of list) {
    runners.set(r.id, { host: r.host, id: r.id, online: r.online, person: r.personName });
  }
}

/** A Requirement's runner as shown; one this process has not heard of yet shows as offline. */
export function runnerView(id: string | null | undefined): RequirementRunner | null {
  if (!id) {
    return null;
  }
  return runners.get(id) ?? { host: 'unknown', id, online: false, person: 'unknown' };
}
