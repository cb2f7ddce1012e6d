import { MigrationInterface, QueryRunner } from 'typeorm';

export class TimersAndTriggers1764720000000 implements MigrationInterface {
  name = 'TimersAndTriggers1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE agent_timer (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      description text NOT NULL,
      schedule varchar NOT NULL,
      interval_seconds integer NOT NULL,
      status varchar NOT NULL,
      next_fire_at varchar,
      last_fired_at varchar,
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL
    )`);
    // The scheduler's one question: the earliest active timer.
    await q.query(`CREATE INDEX idx_timer_next_fire ON agent_timer (status, next_fire_at)`);
    await q.query(`CREATE INDEX idx_timer_requirement ON agent_timer (requirement_id, created_at)`);
    await q.query(`CREATE INDEX idx_timer_created ON agent_timer (created_at, id)`);
    // One row per delivered external event: what makes a delivery happen at most once (invariant 10).
    await q.query(`CREATE TABLE agent_trigger_receipt (
      trigger_id varchar NOT NULL,
      receipt_key varchar NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      message_id varchar,
      created_at varchar NOT NULL,
      PRIMARY KEY (trigger_id, receipt_key)
    )`);
    await q.query(`CREATE INDEX idx_trigger_receipt_requirement ON agent_trigger_receipt (requirement_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE agent_trigger_receipt');
    await q.query('DROP TABLE agent_timer');
  }
}
