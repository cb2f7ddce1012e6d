import type { EventActor } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { RequirementRows } from '../requirements/requirements.repository';

/** The RD run lifecycle's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * An explicit start is being decided, inside its unit (`actor` is who asks): a handler throws
     * to refuse it (unmet dependencies, a reached budget), which rolls the unit back.
     */
    'requirement.starting': {
      args: [tx: UnitOfWork, rows: RequirementRows, actor: EventActor];
      returns: void;
      delivery: 'inOrder';
    };
    /** A Requirement was cancelled and its run is gone (its processes ended): what it leaves outside the database is dealt with. */
    'requirement.cancelSettled': { args: [requirementId: string]; returns: void; delivery: 'settle' };
  }
}
