import { MigrationInterface, QueryRunner } from 'typeorm';

/** A git worktree and branch per Requirement (issue 14), in a table of its own. */
export class RequirementWorktrees1765324800000 implements MigrationInterface {
  name = 'RequirementWorktrees1765324800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE requirement_worktree (
      requirement_id varchar PRIMARY KEY NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      isolation varchar NOT NULL,
      base_ref varchar,
      path varchar,
      branch varchar,
      subdirectory varchar,
      base_sha varchar,
      head_sha varchar,
      ahead integer NOT NULL,
      behind integer NOT NULL,
      dirty boolean NOT NULL,
      port_base integer,
      created_at varchar,
      setup_at varchar,
      last_run_at varchar,
      removed_at varchar,
      refreshed_at varchar,
      updated_at varchar NOT NULL
    )`);
    // Port blocks are handed out in the write path; the index makes a duplicate impossible anyway.
    await q.query(
      `CREATE UNIQUE INDEX idx_requirement_worktree_port ON requirement_worktree (port_base) WHERE port_base IS NOT NULL`,
    );
    await q.query(`CREATE INDEX idx_requirement_worktree_path ON requirement_worktree (path)`);
    // Requirements from before worked in the checkout, and their sessions resume by that cwd: they stay in place.
    await q.query(`INSERT INTO requirement_worktree (requirement_id, isolation, ahead, behind, dirty, updated_at)
      SELECT id, 'in_place', 0, 0, FALSE, updated_at FROM requirement`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE requirement_worktree');
  }
}
