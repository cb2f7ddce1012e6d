import type { ReviewRequestStatus } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { PullRequestEntity } from '../pull-requests/pull-request.entity';
import type { RequirementRows } from '../requirements/requirements.repository';
import type { ReviewRequestEntity } from './review-request.entity';

/** How a review ended, for the handlers that run in its end unit. */
export interface ReviewEnd {
  review: ReviewRequestEntity;
  status: ReviewRequestStatus;
  pullRequest: PullRequestEntity;
}

/** The reviews feature's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /** Inside a review's end unit, after its reviewer or system message (the review loop decides its next round). */
    'review.ending': {
      args: [tx: UnitOfWork, rows: RequirementRows, end: ReviewEnd];
      returns: void;
      delivery: 'inOrder';
    };
  }
}
