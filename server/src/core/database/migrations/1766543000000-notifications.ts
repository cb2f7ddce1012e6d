import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47 §3: Needs-you items sent outside the browser. `notification_pending` holds one row per
 * channel and item (its primary key: an item goes to a channel at most once) until a delivery
 * takes it; `notification_delivery` is one message with the items it carries, sent and retried
 * under the same id. Rows outlive their Requirement on purpose (a sent message is history); they
 * are pruned after 30 days.
 */
export class Notifications1766543000000 implements MigrationInterface {
  name = 'Notifications1766543000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE notification_pending (
      channel_id varchar NOT NULL,
      item_id varchar NOT NULL,
      requirement_id varchar NOT NULL,
      reason varchar NOT NULL,
      since varchar NOT NULL,
      summary varchar NOT NULL,
      title varchar NOT NULL,
      due_at varchar NOT NULL,
      delivery_id varchar,
      created_at varchar NOT NULL,
      PRIMARY KEY (channel_id, item_id)
    )`);
    await q.query('CREATE INDEX notification_pending_due ON notification_pending (delivery_id, due_at)');
    await q.query(`CREATE TABLE notification_delivery (
      id varchar PRIMARY KEY NOT NULL,
      channel_id varchar NOT NULL,
      kind varchar NOT NULL,
      status varchar NOT NULL,
      items text NOT NULL,
      attempts integer NOT NULL,
      last_error varchar,
      created_at varchar NOT NULL,
      next_attempt_at varchar,
      delivered_at varchar
    )`);
    await q.query('CREATE INDEX notification_delivery_created ON notification_delivery (created_at, id)');
    await q.query('CREATE INDEX notification_delivery_due ON notification_delivery (status, next_attempt_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE notification_delivery');
    await q.query('DROP TABLE notification_pending');
  }
}
