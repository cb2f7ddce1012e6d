import type { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';

/** The worktrees feature's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /** A worktree's git state was read again (after a run, or on demand): the conflict radar looks at its work again. */
    'worktree.refreshed': { args: [row: RequirementWorktreeEntity]; returns: void; delivery: 'notify' };
  }
}

export {};
