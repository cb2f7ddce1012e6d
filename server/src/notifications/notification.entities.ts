import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { AttentionReason, DeliveryStatus, NotificationDeliveryItem, NotificationKind } from '@libs/contracts';

/** A Needs-you item owed to one channel, until a delivery takes it (issue 47 §3). */
@Entity('notification_pending')
@Index('notification_pending_due', ['deliveryId', 'dueAt'])
export class NotificationPendingEntity {
  @PrimaryColumn('varchar') channelId!: string;
  @PrimaryColumn('varchar') itemId!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') reason!: AttentionReason;
  @Column('varchar') since!: string;
  @Column('varchar') summary!: string;
  @Column('varchar') title!: string;
  /** Not sent before this (the channel's delaySeconds after the item opened). */
  @Column('varchar') dueAt!: string;
  /** The delivery that carries it, once one took it. */
  @Column('varchar', { nullable: true }) deliveryId!: string | null;
  @Column('varchar') createdAt!: string;
}

/** One message to one channel; retried under the same id until it is delivered or 24 h passed. */
@Entity('notification_delivery')
@Index('notification_delivery_created', ['createdAt', 'id'])
@Index('notification_delivery_due', ['status', 'nextAttemptAt'])
export class NotificationDeliveryEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') channelId!: string;
  @Column('varchar') kind!: NotificationKind;
  @Column('varchar') status!: DeliveryStatus;
  @Column('simple-json') items!: NotificationDeliveryItem[];
  @Column('integer') attempts!: number;
  @Column('varchar', { nullable: true }) lastError!: string | null;
  @Column('varchar') createdAt!: string;
  @Column('varchar', { nullable: true }) nextAttemptAt!: string | null;
  @Column('varchar', { nullable: true }) deliveredAt!: string | null;
}
