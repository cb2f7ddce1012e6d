import type { EventActor } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { EventLog } from '../events/event-log.service';
import type { RequirementRows } from '../requirements/requirements.repository';
import { ReviewCommentDto, toReviewComment } from './dto/review-comment.dto';
import type { ReviewCommentEntity } from './review-comment.entities';
import type { ReviewCommentsRepository } from './review-comments.repository';

/**
 * The comments a unit changed, as they now are with their threads, announced in one
 * `review_comments.updated` event of that unit (what every writer of the feature ends with).
 */
export async function publishComments(
  events: EventLog,
  repository: ReviewCommentsRepository,
  tx: UnitOfWork,
  rows: RequirementRows,
  changed: ReviewCommentEntity[],
  actor: EventActor,
): Promise<ReviewCommentDto[]> {
  const replies = await repository.replies(
    changed.map((r) => r.id),
    tx,
  );
  const comments = changed.map((row) => toReviewComment(row, replies));
  await events.append(tx, {
    actor,
    payload: { reviewComments: comments },
    requirementId: rows.requirement.id,
    sessionId: rows.session.id,
    type: 'review_comments.updated',
  });
  return comments;
}
