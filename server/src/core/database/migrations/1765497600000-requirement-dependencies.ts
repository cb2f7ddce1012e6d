import { MigrationInterface, QueryRunner } from 'typeorm';

/** Requirements that wait for others (issue 18 §2): done, or every PR merged. */
export class RequirementDependencies1765497600000 implements MigrationInterface {
  name = 'RequirementDependencies1765497600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE requirement_dependency (
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      depends_on_requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      until varchar NOT NULL,
      auto_start boolean NOT NULL,
      state varchar NOT NULL,
      reason text,
      resolved_at varchar,
      notified_at varchar,
      created_at varchar NOT NULL,
      PRIMARY KEY (requirement_id, depends_on_requirement_id)
    )`);
    // What a Requirement that closes or merges asks: who waits for me.
    await q.query(
      `CREATE INDEX idx_requirement_dependency_target ON requirement_dependency (depends_on_requirement_id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE requirement_dependency');
  }
}
