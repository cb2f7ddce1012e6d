import type { EntityManager } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

/**
 * One unit of work inside the serialized write path. Everything a unit writes goes through
 * `manager`; its events are published, and its `afterCommit` hooks run, only once the
 * transaction holding it has committed.
 */
export class WriteTx {
  readonly events: ManagerEvent[] = [];
  readonly afterCommitHooks: Array<() => void> = [];

  constructor(readonly manager: EntityManager) {}

  afterCommit(hook: () => void): void {
    this.afterCommitHooks.push(hook);
  }
}
