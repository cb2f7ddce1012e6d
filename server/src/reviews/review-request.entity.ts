import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { Provider, ReasoningEffort, ReviewRequestStatus, ReviewRequester, ReviewVerdict } from '@libs/contracts';

/** A request (a person's, or the review loop's) for an AI review of an open PR, carried out by one reviewer run. */
@Entity('review_request')
// One active review per PR (invariant 7).
@Index('idx_review_request_active', ['pullRequestId'], { unique: true, where: `status = 'running'` })
@Index('idx_review_request_pull_request', ['pullRequestId', 'createdAt'])
@Index('idx_review_request_created', ['createdAt', 'id'])
export class ReviewRequestEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') pullRequestId!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') runId!: string;
  @Column('varchar') provider!: Provider;
  @Column('varchar', { nullable: true }) model!: string | null;
  @Column('varchar', { nullable: true }) reasoningEffort!: ReasoningEffort | null;
  @Column('text', { nullable: true }) prompt!: string | null;
  /** The PR's head when the review was requested: what the reviewer reviews. */
  @Column('varchar') targetHeadSha!: string;
  @Column('varchar') status!: ReviewRequestStatus;
  @Column('varchar') requestedBy!: ReviewRequester;
  /** The reviewer's verdict line once it succeeded; null without one. */
  @Column('varchar', { nullable: true }) verdict!: ReviewVerdict | null;
  @Column('text', { nullable: true }) error!: string | null;
  /** Set when the PR's head moves away from targetHeadSha. */
  @Column('boolean', { default: false }) stale!: boolean;
  @Column('varchar') createdAt!: string;
  @Column('varchar') updatedAt!: string;
  @Column('varchar', { nullable: true }) finishedAt!: string | null;
}
