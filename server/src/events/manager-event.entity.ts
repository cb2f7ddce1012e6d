import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

import type { EventActorKind, ManagerEventType } from '@libs/contracts';

/**
 * The durable event log. `id` is AUTOINCREMENT so ids grow strictly and are never reused, even
 * after old events are purged: SSE cursors stay meaningful forever.
 */
@Entity('manager_event')
export class ManagerEventEntity {
  @PrimaryGeneratedColumn()
  id: number;

  @Column('varchar')
  type: ManagerEventType;

  @Column('varchar', { nullable: true })
  requirementId: string | null;

  @Column('varchar', { nullable: true })
  sessionId: string | null;

  @Column('varchar', { nullable: true })
  runId: string | null;

  @Column('varchar')
  actorKind: EventActorKind;

  @Column('varchar', { nullable: true })
  actorId: string | null;

  /** The event's payload as JSON text, stored once and sent to clients as is. */
  @Column('text')
  payload: string;

  @Column('varchar')
  createdAt: string;
}
