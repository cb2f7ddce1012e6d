import { MigrationInterface, QueryRunner } from 'typeorm';

export class AgentRuns1764547200000 implements MigrationInterface {
  name = 'AgentRuns1764547200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE agent_run (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      session_id varchar REFERENCES agent_session(id) ON DELETE CASCADE,
      role varchar NOT NULL,
      provider varchar NOT NULL,
      model varchar,
      reasoning_effort varchar,
      status varchar NOT NULL,
      task_summary text,
      native_session_id varchar,
      exit_code integer,
      error text,
      input_from_sequence integer,
      input_to_sequence integer,
      input_tokens integer,
      cached_input_tokens integer,
      output_tokens integer,
      reasoning_output_tokens integer,
      trace_count integer NOT NULL DEFAULT 0,
      process_marker varchar,
      process_id integer,
      process_group_id integer,
      process_start_time varchar,
      started_at varchar NOT NULL,
      finished_at varchar,
      updated_at varchar NOT NULL
    )`);
    // Invariant 2: at most one active run per session, enforced by the database itself.
    await q.query(`CREATE UNIQUE INDEX idx_run_active_session ON agent_run (session_id) WHERE status = 'running'`);
    await q.query(`CREATE INDEX idx_run_requirement ON agent_run (requirement_id, started_at)`);
    await q.query(`CREATE INDEX idx_run_status ON agent_run (status)`);
    // Trace entries are stored once, as run.trace.appended events: read them by run or Requirement.
    await q.query(`CREATE INDEX idx_event_run ON manager_event (run_id, id) WHERE run_id IS NOT NULL`);
    await q.query(
      `CREATE INDEX idx_event_requirement ON manager_event (requirement_id, id) WHERE requirement_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX idx_event_requirement');
    await q.query('DROP INDEX idx_event_run');
    await q.query('DROP TABLE agent_run');
  }
}
