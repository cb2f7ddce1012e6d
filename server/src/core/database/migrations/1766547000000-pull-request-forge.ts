import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 49 §5: a pull request lives on a forge (GitHub, or GitLab as a merge request). Every row so
 * far is GitHub's; the identity becomes forge, repository and number, since `org/repo!3` on GitLab
 * and `org/repo#3` on GitHub are different requests.
 */
export class PullRequestForge1766547000000 implements MigrationInterface {
  name = 'PullRequestForge1766547000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query("ALTER TABLE pull_request ADD COLUMN forge varchar NOT NULL DEFAULT 'github'");
    await q.query('DROP INDEX idx_pull_request_identity');
    await q.query('CREATE UNIQUE INDEX idx_pull_request_identity ON pull_request (forge, repository_key, number)');
  }

  async down(q: QueryRunner): Promise<void> {
    // The older schema knows GitHub only: GitLab's requests cannot stay (they would become GitHub's and collide).
    await q.query("DELETE FROM pull_request WHERE forge <> 'github'");
    await q.query('DROP INDEX idx_pull_request_identity');
    await q.query('CREATE UNIQUE INDEX idx_pull_request_identity ON pull_request (repository_key, number)');
    await q.query('ALTER TABLE pull_request DROP COLUMN forge');
  }
}
