import type { ManagerEvent } from '@libs/contracts';

/** The board event feed's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * Team mode: an event read from the board's events table was published here, any runner's
     * (this one's too, when another runner's came between). Features that act on what other
     * runners wrote (input for a Requirement this runner runs, a stop asked elsewhere) react;
     * what they do must be idempotent, as the event may be this runner's own.
     */
    'board.eventPublished': { args: [event: ManagerEvent]; returns: void; delivery: 'notify' };
  }
}

export {};
