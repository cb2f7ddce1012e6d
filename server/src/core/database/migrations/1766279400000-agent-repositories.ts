import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 44: each agent works in a repository of its own, and the manager imports its work into
 * the person's repository. A worktree row says how its working copy is made (`layout`), what the
 * last import brought (`work_sha`: the branch's head with the uncommitted files on top) and why
 * the last import was refused; a queued land, the work the person was shown. Worktrees made before are linked worktrees of the person's
 * repository; each becomes an own repository at its next run.
 */
export class AgentRepositories1766279400000 implements MigrationInterface {
  name = 'AgentRepositories1766279400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE requirement_worktree ADD COLUMN layout varchar`);
    await q.query(`ALTER TABLE requirement_worktree ADD COLUMN work_sha varchar`);
    await q.query(`ALTER TABLE requirement_worktree ADD COLUMN import_error varchar`);
    await q.query(`ALTER TABLE landing_queue ADD COLUMN expected_head varchar`);
    await q.query(
      `UPDATE requirement_worktree SET layout = 'linked_worktree' WHERE isolation = 'worktree' AND created_at IS NOT NULL AND removed_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE landing_queue DROP COLUMN expected_head');
    await q.query('ALTER TABLE requirement_worktree DROP COLUMN import_error');
    await q.query('ALTER TABLE requirement_worktree DROP COLUMN work_sha');
    await q.query('ALTER TABLE requirement_worktree DROP COLUMN layout');
  }
}
