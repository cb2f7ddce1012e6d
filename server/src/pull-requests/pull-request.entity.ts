import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { AutoReviewOutcome, AutoReviewState, Forge, Provider, PullRequestStatus } from '@libs/contracts';

/** A pull request (a GitLab merge request) an RD agent registered for its Requirement. */
@Entity('pull_request')
@Index('idx_pull_request_identity', ['forge', 'repositoryKey', 'number'], { unique: true })
@Index('idx_pull_request_requirement', ['requirementId', 'createdAt'])
@Index('idx_pull_request_status', ['status', 'githubObservedAt'])
export class PullRequestEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  /** Where it lives (issue 49 §5): with `repositoryKey` and `number`, its identity. */
  @Column('varchar', { default: 'github' }) forge!: Forge;
  /** `owner/name` on GitHub; the project's full path on GitLab (`group/sub/project`). */
  @Column('varchar') repository!: string;
  /** Lower-cased `repository`: with `forge` and `number`, the PR's identity (names are case-insensitive). */
  @Column('varchar') repositoryKey!: string;
  @Column('integer') number!: number;
  @Column('varchar') url!: string;
  @Column('varchar') title!: string;
  @Column('varchar') baseBranch!: string;
  @Column('varchar') headBranch!: string;
  @Column('varchar') headSha!: string;
  /** Set by the agent only when first registered; afterwards only the reconciler changes it. */
  @Column('varchar') status!: PullRequestStatus;
  /** The reconciler's last summary of the PR on GitHub; null until first observed (the baseline). */
  @Column('varchar', { nullable: true }) githubFingerprint!: string | null;
  /** GitHub's mergeable state when last observed (MERGEABLE, CONFLICTING, UNKNOWN). */
  @Column('varchar', { nullable: true }) githubMergeable!: string | null;
  @Column('varchar', { nullable: true }) githubObservedAt!: string | null;
  /** Its review loop (issue 18 §3): changed only by the loop; the settings are the Requirement's when the round started. */
  @Column('varchar', { default: 'off' }) autoReviewState!: AutoReviewState;
  @Column('integer', { default: 0 }) autoReviewRound!: number;
  @Column('integer', { nullable: true }) autoReviewMaxRounds!: number | null;
  @Column('varchar', { nullable: true }) autoReviewProvider!: Provider | null;
  /** The head the latest round reviewed: a push to another head is what starts the next round. */
  @Column('varchar', { nullable: true }) autoReviewHeadSha!: string | null;
  @Column('varchar', { nullable: true }) autoReviewOutcome!: AutoReviewOutcome | null;
  @Column('varchar') createdAt!: string;
  @Column('varchar') updatedAt!: string;
}
