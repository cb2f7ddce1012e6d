import type { ManagerEventPayloads, PullRequestStatus } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { PullRequestEntity } from './pull-request.entity';

/** What head-change handlers add to the PR's event payload (the reviews the move made stale). */
export type HeadChangeExtras = Pick<ManagerEventPayloads['pull_request.updated'], 'reviewRequests'>;

/** The pull-request feature's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * A PR's head commit changed (GitHub's state, or the agent registered a new head), inside the
     * unit that records it: reviews of the old head become stale. What the handlers return is
     * added to the `pull_request.updated` payload.
     */
    'pullRequest.headChanged': {
      args: [tx: UnitOfWork, pullRequest: PullRequestEntity];
      returns: HeadChangeExtras;
      delivery: 'inOrder';
    };
    /** GitHub changed a PR's status, inside the reconciler's unit (a merge meets dependencies). */
    'pullRequest.statusChanged': {
      args: [tx: UnitOfWork, pullRequest: PullRequestEntity, previous: PullRequestStatus];
      returns: void;
      delivery: 'inOrder';
    };
  }
}
