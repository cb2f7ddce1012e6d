import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { NotificationDeliveryEntity, NotificationPendingEntity } from './notification.entities';

/** The only place that reads and writes `notification_pending` and `notification_delivery`. */
@Injectable()
export class NotificationsRepository {
  constructor(private readonly database: Database) {}

  /** Owed once per channel and item: a second time (a replay, another runner) is nothing. */
  owe(uow: UnitOfWork, row: NotificationPendingEntity): void {
    uow.insert(NotificationPendingEntity, row, { onConflict: 'ignore' });
  }

  /** Items no delivery took yet, oldest due first (bounded: one batch per look). */
  untaken(limit: number): Promise<NotificationPendingEntity[]> {
    return this.database
      .read(NotificationPendingEntity)
      .createQueryBuilder('p')
      .where('p.delivery_id IS NULL')
      .orderBy('p.due_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Gives items to a new delivery, in the unit that inserts it. */
  take(uow: UnitOfWork, delivery: NotificationDeliveryEntity, items: NotificationPendingEntity[]): void {
    uow.insert(NotificationDeliveryEntity, delivery);
    for (const item of items) {
      // Only an item no delivery took: two looks at once (a leadership handover) never both send it.
      uow.execute(
        'UPDATE notification_pending SET delivery_id = ? WHERE channel_id = ? AND item_id = ? AND delivery_id IS NULL',
        [delivery.id, item.channelId, item.itemId],
      );
    }
  }

  /** Items cleared before their delay ran out: never sent. */
  forget(uow: UnitOfWork, items: NotificationPendingEntity[]): void {
    for (const item of items) {
      uow.delete(NotificationPendingEntity, { channelId: item.channelId, itemId: item.itemId });
    }
  }

  /** Deliveries to send now: pending and due. */
  due(now: string, limit: number): Promise<NotificationDeliveryEntity[]> {
    return this.database
      .read(NotificationDeliveryEntity)
      .createQueryBuilder('d')
      .where("d.status = 'pending' AND d.next_attempt_at <= :now", { now })
      .orderBy('d.next_attempt_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** The earliest time something is owed: an untaken item or a delivery's next attempt; null when nothing is. */
  async nextDue(): Promise<string | null> {
    const [item, delivery] = await Promise.all([
      this.database
        .read(NotificationPendingEntity)
        .createQueryBuilder('p')
        .select('MIN(p.due_at)', 'at')
        .where('p.delivery_id IS NULL')
        .getRawOne<{ at: string | null }>(),
      this.database
        .read(NotificationDeliveryEntity)
        .createQueryBuilder('d')
        .select('MIN(d.next_attempt_at)', 'at')
        .where("d.status = 'pending'")
        .getRawOne<{ at: string | null }>(),
    ]);
    const times = [item?.at, delivery?.at].filter((t): t is string => typeof t === 'string');
    return times.length === 0 ? null : times.sort()[0];
  }

  /** When each channel last had a message, for the coalescing window after a restart. */
  async lastSent(): Promise<Map<string, string>> {
    const rows = await this.database
      .read(NotificationDeliveryEntity)
      .createQueryBuilder('d')
      .select('d.channel_id', 'channelId')
      .addSelect('MAX(d.created_at)', 'at')
      .groupBy('d.channel_id')
      .getRawMany<{ channelId: string; at: string }>();
    return new Map(rows.map((r) => [r.channelId, r.at]));
  }

  settle(uow: UnitOfWork, id: string, set: Partial<NotificationDeliveryEntity>): void {
    uow.update(NotificationDeliveryEntity, set, { id });
  }

  /** The latest deliveries, newest first. */
  list(limit: number, channelId?: string): Promise<NotificationDeliveryEntity[]> {
    return this.database.read(NotificationDeliveryEntity).find({
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
      where: channelId === undefined ? {} : { channelId },
    });
  }

  /** History past `before` goes (the items' rows with their deliveries). */
  prune(uow: UnitOfWork, before: string): void {
    uow.execute(
      'DELETE FROM notification_pending WHERE delivery_id IN (SELECT id FROM notification_delivery WHERE created_at < ?)',
      [before],
    );
    uow.execute('DELETE FROM notification_delivery WHERE created_at < ?', [before]);
  }
}
