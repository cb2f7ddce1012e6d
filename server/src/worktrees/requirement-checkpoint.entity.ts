import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { CheckpointKind } from '@libs/contracts';

/** A checkpoint of a Requirement's working state; its commit is kept alive by a private ref (CheckpointsService). */
@Entity('requirement_checkpoint')
@Index('requirement_checkpoint_requirement', ['requirementId', 'at'])
export class RequirementCheckpointEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar', { nullable: true }) runId!: string | null;
  @Column('varchar') kind!: CheckpointKind;
  @Column('varchar') at!: string;
  @Column('varchar', { name: 'commit_sha' }) commit!: string;
  @Column('varchar') head!: string;
  @Column('integer') filesChanged!: number;
}
