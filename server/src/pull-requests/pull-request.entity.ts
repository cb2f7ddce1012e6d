import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { PullRequestStatus } from '@libs/contracts';

/** A pull request an RD agent registered for its Requirement. */
@Entity('pull_request')
@Index('idx_pull_request_identity', ['repositoryKey', 'number'], { unique: true })
@Index('idx_pull_request_requirement', ['requirementId', 'createdAt'])
@Index('idx_pull_request_status', ['status', 'githubObservedAt'])
export class PullRequestEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') repository!: string;
  /** Lower-cased `owner/name`: with `number`, the PR's identity (GitHub names are case-insensitive). */
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
  @Column('varchar') createdAt!: string;
  @Column('varchar') updatedAt!: string;
}
