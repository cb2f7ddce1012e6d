import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

import type { EventActorKind, ManagerEventType } from '@libs/contracts';

/**
 * The durable event log. `id` is AUTOINCREMENT so ids grow strictly and are never reused, even
 * after old events are purged: SSE cursors stay meaningful forever.
 */
@Entity('manager_event')
@Index('idx_event_run', ['runId', 'id'], { where: 'run_id IS NOT NULL' })
@Index('idx_event_requirement', ['requirementId', 'id'], { where: 'requirement_id IS NOT NULL' })
export class ManagerEventEntity {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar')
  type!: ManagerEventType;

  @Column('varchar', { nullable: true })
  requirementId!: string | null;

  @Column('varchar', { nullable: true })
  sessionId!: string | null;

  @Column('varchar', { nullable: true })
  runId!: string | null;

  @Column('varchar')
  actorKind!: EventActorKind;

  @Column('varchar', { nullable: true })
  actorId!: string | null;

  /** A person's name and email as they were when the event was written (null on other actors and older events). */
  @Column('varchar', { nullable: true })
  actorName!: string | null;

  @Column('varchar', { nullable: true })
  actorEmail!: string | null;

  /** The event's payload as JSON text, stored once and sent to clients as is. */
  @Column('text')
  payload!: string;

  @Column('varchar')
  createdAt!: string;
}
