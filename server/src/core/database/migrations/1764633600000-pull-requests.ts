import { MigrationInterface, QueryRunner } from 'typeorm';

export class PullRequests1764633600000 implements MigrationInterface {
  name = 'PullRequests1764633600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE pull_request (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      repository varchar NOT NULL,
      repository_key varchar NOT NULL,
      number integer NOT NULL,
      url varchar NOT NULL,
      title varchar NOT NULL,
      base_branch varchar NOT NULL,
      head_branch varchar NOT NULL,
      head_sha varchar NOT NULL,
      status varchar NOT NULL,
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX idx_pull_request_identity ON pull_request (repository_key, number)`);
    await q.query(`CREATE INDEX idx_pull_request_requirement ON pull_request (requirement_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE pull_request');
  }
}
