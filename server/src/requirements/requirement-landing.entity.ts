import { Column, Entity, PrimaryColumn } from 'typeorm';

import type { LandMethod, RequirementConflict } from '@libs/contracts';

/**
 * A Requirement's landing (issue 28): the conflict radar's last answer for its work and, once it
 * landed, how and where. Written only by the landing feature; loaded beside the Requirement for
 * its snapshot, as its worktree row is. No row yet reads as "not checked, not landed".
 */
@Entity('requirement_landing')
export class RequirementLandingEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  /** Null: not checked (nothing to land, or not in a worktree). */
  @Column('boolean', { nullable: true }) mergesCleanly!: boolean | null;
  @Column('simple-json') conflictPaths!: string[];
  @Column('simple-json') conflictsWith!: RequirementConflict[];
  @Column('integer', { nullable: true }) behindBy!: number | null;
  @Column('varchar', { nullable: true }) baseSha!: string | null;
  @Column('varchar', { nullable: true }) headSha!: string | null;
  @Column('varchar', { nullable: true }) checkedAt!: string | null;
  @Column('varchar', { nullable: true }) landedAt!: string | null;
  @Column('varchar', { nullable: true }) landedMethod!: LandMethod | null;
  @Column('varchar', { nullable: true }) landedCommit!: string | null;
  /** The agent's work as its land left it (RequirementLanding.landedWork). */
  @Column('varchar', { nullable: true }) landedWork!: string | null;
  /**
   * A local land in flight: the commit it is about to put on the base, recorded before the base
   * moves. Whoever finds it later (a retry, the next start) asks git whether the base holds it,
   * and records the land or forgets the attempt: a kill between the two never lands twice.
   */
  @Column('varchar', { nullable: true }) pendingCommit!: string | null;
  @Column('varchar', { nullable: true }) pendingMethod!: LandMethod | null;
  @Column('varchar', { nullable: true }) pendingBaseRef!: string | null;
  @Column('varchar') updatedAt!: string;
}
