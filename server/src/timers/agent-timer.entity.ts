import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { TimerSchedule, TimerStatus } from '@libs/contracts';

/** A wake-up for a Requirement's agent: once after an interval, or every interval. */
@Entity('agent_timer')
@Index('idx_timer_next_fire', ['status', 'nextFireAt'])
@Index('idx_timer_requirement', ['requirementId', 'createdAt'])
@Index('idx_timer_created', ['createdAt', 'id'])
export class AgentTimerEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('text') description!: string;
  @Column('varchar') schedule!: TimerSchedule;
  @Column('integer') intervalSeconds!: number;
  @Column('varchar') status!: TimerStatus;
  /** The occurrence due next; null once the timer is no longer active. */
  @Column('varchar', { nullable: true }) nextFireAt!: string | null;
  @Column('varchar', { nullable: true }) lastFiredAt!: string | null;
  @Column('varchar') createdAt!: string;
  @Column('varchar') updatedAt!: string;
}
