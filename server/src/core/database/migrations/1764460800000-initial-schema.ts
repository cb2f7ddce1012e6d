import { MigrationInterface, QueryRunner } from 'typeorm';

import { isPostgres } from './dialect';

export class InitialSchema1764460800000 implements MigrationInterface {
  name = 'InitialSchema1764460800000';

  async up(q: QueryRunner): Promise<void> {
    // SQLite's AUTOINCREMENT keeps a high-water mark; on PostgreSQL ids come from the write path
    // (it keeps the mark in am_writer), SERIAL only matches what the entity declares.
    const eventId = isPostgres(q) ? 'id SERIAL PRIMARY KEY NOT NULL' : 'id integer PRIMARY KEY AUTOINCREMENT NOT NULL';
    await q.query(`CREATE TABLE requirement (
      id varchar PRIMARY KEY NOT NULL,
      title varchar NOT NULL,
      description text NOT NULL,
      status varchar NOT NULL,
      provider varchar NOT NULL,
      model varchar,
      reasoning_effort varchar,
      created_by varchar NOT NULL,
      parent_requirement_id varchar REFERENCES requirement(id) ON DELETE SET NULL,
      source_session_id varchar,
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL,
      completed_at varchar
    )`);
    await q.query(`CREATE INDEX idx_requirement_created ON requirement (created_at, id)`);
    await q.query(`CREATE INDEX idx_requirement_parent ON requirement (parent_requirement_id)`);
    await q.query(`CREATE INDEX idx_requirement_status ON requirement (status, updated_at)`);

    await q.query(`CREATE TABLE agent_session (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      provider varchar NOT NULL,
      native_session_id varchar,
      state varchar NOT NULL,
      last_error text,
      last_consumed_message_sequence integer NOT NULL DEFAULT 0,
      pending_message_count integer NOT NULL DEFAULT 0,
      last_message_sequence integer NOT NULL DEFAULT 0,
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX idx_agent_session_requirement ON agent_session (requirement_id)`);
    await q.query(`CREATE INDEX idx_agent_session_created ON agent_session (created_at, id)`);

    await q.query(`CREATE TABLE requirement_message (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      session_id varchar NOT NULL,
      run_id varchar,
      source_requirement_id varchar,
      author varchar NOT NULL,
      body text NOT NULL,
      sequence integer NOT NULL,
      deliver_to_rd boolean NOT NULL,
      source varchar,
      trigger_id varchar,
      metadata text,
      created_at varchar NOT NULL
    )`);
    await q.query(
      `CREATE UNIQUE INDEX idx_message_requirement_sequence ON requirement_message (requirement_id, sequence)`,
    );

    await q.query(`CREATE TABLE message_attachment (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      message_id varchar REFERENCES requirement_message(id) ON DELETE CASCADE,
      file_name varchar NOT NULL,
      kind varchar NOT NULL,
      media_type varchar NOT NULL,
      byte_size integer NOT NULL,
      created_at varchar NOT NULL
    )`);
    await q.query(`CREATE INDEX idx_attachment_requirement ON message_attachment (requirement_id)`);
    await q.query(`CREATE INDEX idx_attachment_message ON message_attachment (message_id)`);

    await q.query(`CREATE TABLE manager_event (
      ${eventId},
      type varchar NOT NULL,
      requirement_id varchar,
      session_id varchar,
      run_id varchar,
      actor_kind varchar NOT NULL,
      actor_id varchar,
      payload text NOT NULL,
      created_at varchar NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'manager_event',
      'message_attachment',
      'requirement_message',
      'agent_session',
      'requirement',
    ]) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
