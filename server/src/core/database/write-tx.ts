import type { EntityManager } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

/**
 * One unit of work inside the serialized write path. Everything a unit writes goes through
 * `manager`; its events are published, and its `afterCommit` hooks run, only once the
 * transaction holding it has committed.
 */
export class WriteTx {
  /** Events this unit appended; the write path inserts them all at once just before COMMIT. */
  readonly events: ManagerEvent[] = [];
  readonly afterCommitHooks: Array<() => void> = [];

  constructor(
    readonly manager: EntityManager,
    /** Hands out the next event id (ids are assigned by the one writer, see Database). */
    readonly nextEventId: () => number,
  ) {}

  afterCommit(hook: () => void): void {
    this.afterCommitHooks.push(hook);
  }
}
