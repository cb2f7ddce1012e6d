import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 45: an agent run reaches only the hosts the person allows. A Requirement's own additions
 * to the allow-list, and the connections runs' proxies refused (one row per run, host and port,
 * counted), listed on the Requirement and across the board (`GET /api/network/blocked?since=`).
 */
export class Network1766365800000 implements MigrationInterface {
  name = 'Network1766365800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE requirement_network (
      requirement_id varchar PRIMARY KEY NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      allow text NOT NULL,
      updated_at varchar NOT NULL
    )`);
    await q.query(`CREATE TABLE network_blocked (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      run_id varchar NOT NULL,
      host varchar NOT NULL,
      port integer NOT NULL,
      method varchar NOT NULL,
      reason text NOT NULL,
      count integer NOT NULL,
      first_at varchar NOT NULL,
      last_at varchar NOT NULL
    )`);
    await q.query('CREATE UNIQUE INDEX network_blocked_run_host ON network_blocked (run_id, host, port)');
    await q.query('CREATE INDEX network_blocked_last_at ON network_blocked (last_at)');
    await q.query('CREATE INDEX network_blocked_requirement ON network_blocked (requirement_id, last_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE network_blocked');
    await q.query('DROP TABLE requirement_network');
  }
}
