import { Column, Entity, PrimaryColumn } from 'typeorm';

import type { LandMethod, LandingQueueState } from '@libs/contracts';

/** A Requirement waiting in the merge queue (issue 28 §3): landed one at a time, by position. */
@Entity('landing_queue')
export class LandingQueueEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  /** 1 lands next; kept dense by every change. */
  @Column('integer') position!: number;
  @Column('varchar') method!: LandMethod;
  @Column('varchar') state!: LandingQueueState;
  @Column('text', { nullable: true }) reason!: string | null;
  @Column('simple-json') conflictPaths!: string[];
  /** The work the person was shown when queueing it (issue 44 §3): the queue lands only that. */
  @Column('varchar', { nullable: true }) expectedHead!: string | null;
  @Column('varchar') addedAt!: string;
  @Column('varchar') updatedAt!: string;
}
