import type { UnitOfWork } from '../core/database/unit-of-work';

/** The retention feature's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * Requirements are being purged, in the purging unit before their rows go: a handler reads
     * what it owns and registers what to clean up after the commit (worktrees).
     */
    'requirements.purging': { args: [tx: UnitOfWork, requirementIds: string[]]; returns: void; delivery: 'inOrder' };
  }
}
