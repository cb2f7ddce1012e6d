import type { LocalLandMethod } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { RequirementRows } from '../requirements/requirements.repository';

/** The landing feature's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * A Requirement's branch landed locally (merge, squash or rebase), inside the unit that records
     * it: what waits for its work to be merged is met, as for a merged PR.
     */
    'requirement.landed': {
      args: [tx: UnitOfWork, rows: RequirementRows, landed: { commit: string; method: LocalLandMethod }];
      returns: void;
      delivery: 'inOrder';
    };
  }
}

export {};
