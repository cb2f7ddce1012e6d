import { MigrationInterface, QueryRunner } from 'typeorm';

import { isPostgres } from './dialect';

export class ReviewsAndGitHub1764806400000 implements MigrationInterface {
  name = 'ReviewsAndGitHub1764806400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE review_request (
      id varchar PRIMARY KEY NOT NULL,
      pull_request_id varchar NOT NULL REFERENCES pull_request(id) ON DELETE CASCADE,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      run_id varchar NOT NULL,
      provider varchar NOT NULL,
      model varchar,
      reasoning_effort varchar,
      prompt text,
      target_head_sha varchar NOT NULL,
      status varchar NOT NULL,
      requested_by varchar NOT NULL,
      error text,
      stale boolean NOT NULL DEFAULT ${isPostgres(q) ? 'FALSE' : '0'},
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL,
      finished_at varchar
    )`);
    // One active review per PR (invariant 7), enforced by the store as well as by the service.
    await q.query(
      `CREATE UNIQUE INDEX idx_review_request_active ON review_request (pull_request_id) WHERE status = 'running'`,
    );
    await q.query(`CREATE INDEX idx_review_request_pull_request ON review_request (pull_request_id, created_at)`);
    await q.query(`CREATE INDEX idx_review_request_created ON review_request (created_at, id)`);
    // What the reconciler last saw of a PR on GitHub: null until the first observation (the baseline).
    await q.query(`ALTER TABLE pull_request ADD COLUMN github_fingerprint varchar`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN github_mergeable varchar`);
    await q.query(`ALTER TABLE pull_request ADD COLUMN github_observed_at varchar`);
    await q.query(`CREATE INDEX idx_pull_request_status ON pull_request (status, github_observed_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX idx_pull_request_status');
    await q.query('ALTER TABLE pull_request DROP COLUMN github_observed_at');
    await q.query('ALTER TABLE pull_request DROP COLUMN github_mergeable');
    await q.query('ALTER TABLE pull_request DROP COLUMN github_fingerprint');
    await q.query('DROP TABLE review_request');
  }
}
