import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { DependencyCondition, DependencyState } from '@libs/contracts';

/**
 * One Requirement (`requirementId`, the dependent) waiting for another (`dependsOnRequirementId`).
 * `state` leaves `pending` once, in the transaction that saw the dependency met or cancelled;
 * `notifiedAt` is set with the delivery that told the dependent (null: still to tell, which a
 * start after a crash finishes).
 */
@Entity('requirement_dependency')
@Index('idx_requirement_dependency_target', ['dependsOnRequirementId'])
export class RequirementDependencyEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  @PrimaryColumn('varchar') dependsOnRequirementId!: string;
  @Column('varchar') until!: DependencyCondition;
  /** The dependent's choice, the same on each of its rows: start once every dependency is met. */
  @Column('boolean') autoStart!: boolean;
  @Column('varchar') state!: DependencyState;
  @Column('text', { nullable: true }) reason!: string | null;
  @Column('varchar', { nullable: true }) resolvedAt!: string | null;
  @Column('varchar', { nullable: true }) notifiedAt!: string | null;
  @Column('varchar') createdAt!: string;
}
