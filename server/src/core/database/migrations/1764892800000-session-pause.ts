import { MigrationInterface, QueryRunner } from 'typeorm';

/** A stop pauses the RD session durably (api-contract "State rules", corrected 2026-12-01). */
export class SessionPause1764892800000 implements MigrationInterface {
  name = 'SessionPause1764892800000';

  async up(q: QueryRunner): Promise<void> {
    // Null for every existing session: nothing was paused before stop became a pause.
    await q.query(`ALTER TABLE agent_session ADD COLUMN paused_at varchar`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE agent_session DROP COLUMN paused_at');
  }
}
