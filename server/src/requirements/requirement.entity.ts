import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { RequirementLandingEntity } from './requirement-landing.entity';
import type { AttentionItemEntity } from './attention-item.entity';
import type { RequirementWorktreeEntity } from './requirement-worktree.entity';
import type { RequirementDependencyEntity } from './requirement-dependency.entity';
import type { AgentSessionEntity } from './agent-session.entity';
import type { Provider, ReasoningEffort, RequirementCreator, RequirementStatus } from '@libs/contracts';

@Entity('requirement')
@Index('idx_requirement_created', ['createdAt', 'id'])
@Index('idx_requirement_parent', ['parentRequirementId'])
@Index('idx_requirement_status', ['status', 'updatedAt'])
@Index('requirement_source_key', ['sourceKey'], { unique: true })
export class RequirementEntity {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('varchar')
  title!: string;

  @Column('text')
  description!: string;

  @Column('varchar')
  status!: RequirementStatus;

  @Column('varchar')
  provider!: Provider;

  @Column('varchar', { nullable: true })
  model!: string | null;

  @Column('varchar', { nullable: true })
  reasoningEffort!: ReasoningEffort | null;

  @Column('varchar')
  createdBy!: RequirementCreator;

  @Column('varchar', { nullable: true })
  parentRequirementId!: string | null;

  @Column('varchar', { nullable: true })
  sourceSessionId!: string | null;

  /** The Requirement this one was forked from (a person's copy; not a parent: no agent rights follow). */
  @Column('varchar', { nullable: true })
  forkedFromRequirementId!: string | null;

  /** Where it was imported from (issue 49): the forge's issue as it was then, JSON (RequirementSource); null: made here. */
  @Column('varchar', { nullable: true })
  source!: string | null;

  /** `github:owner/repo#12` (lower case): an issue is imported once. */
  @Column('varchar', { nullable: true })
  sourceKey!: string | null;

  /** Team mode: the runner it runs on (its first run's; see docs/team-mode.md), null off a board or before its first run. */
  @Column('varchar', { nullable: true })
  runnerId!: string | null;

  /** The review loop's reviewer (issue 18 §3); null when the Requirement has no loop. */
  @Column('varchar', { nullable: true })
  autoReviewProvider!: Provider | null;

  /** At most this many loop rounds per PR; set exactly when autoReviewProvider is. */
  @Column('integer', { nullable: true })
  autoReviewMaxRounds!: number | null;

  @Column('varchar')
  createdAt!: string;

  @Column('varchar')
  updatedAt!: string;

  @Column('varchar', { nullable: true })
  completedAt!: string | null;

  /** The budget (issue 18 §1): what its RD runs may spend; null limits are none. */
  @Column('integer', { nullable: true })
  budgetMaxTokens!: number | null;

  @Column('double precision', { nullable: true })
  budgetMaxCostUsd!: number | null;

  /** When a run reached the budget and paused the session (its `pausedAt` is set with it), else null. */
  @Column('varchar', { nullable: true })
  budgetReachedAt!: string | null;

  /** Its RD runs' usage, summed as each run closes (so a snapshot never sums runs). */
  @Column('integer', { default: 0 })
  usageInputTokens!: number;

  @Column('integer', { default: 0 })
  usageOutputTokens!: number;

  /** Null until a run's provider reported a cost. */
  @Column('double precision', { nullable: true })
  usageCostUsd!: number | null;

  /**
   * Its tree's usage (issue 25 §4): its own plus every Requirement proposed below it, at any
   * depth. A run's close adds its usage to its Requirement and every ancestor in one unit, so no
   * snapshot walks the tree, and a purged child's spending stays counted. The budget caps this.
   */
  @Column('integer', { default: 0 })
  treeUsageInputTokens!: number;

  @Column('integer', { default: 0 })
  treeUsageOutputTokens!: number;

  @Column('double precision', { nullable: true })
  treeUsageCostUsd!: number | null;

  /** Filled by `RequirementsService.loadForWrite` (one query for both rows); not a column. */
  session?: AgentSessionEntity;

  /** Where it works (its `requirement_worktree` row), loaded beside it for snapshots; not a column. */
  worktree?: RequirementWorktreeEntity | null;
  /** Its landing and radar state (its `requirement_landing` row), loaded beside it for snapshots; not a column. */
  landing?: RequirementLandingEntity | null;
  /** Why it needs its person (its open `attention_item` rows), loaded beside it for snapshots; not a column. */
  attention?: AttentionItemEntity[];
  /** Filled by `RequirementsService.loadForWrite` and its snapshots (the dependencies feature's rows); not a column. */
  dependsOn?: RequirementDependencyEntity[];
}
