import type { ConflictRadar } from '@libs/contracts';

/** The conflict radar's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /** The radar finished a pass (whether or not anything changed): the merge queue may go on. */
    'landing.radarChecked': { args: [radar: ConflictRadar]; returns: void; delivery: 'notify' };
  }
}

export {};
