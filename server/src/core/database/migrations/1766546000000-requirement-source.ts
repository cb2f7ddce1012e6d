import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 49 §1: a Requirement imported from a forge's issue says where it came from (`source`, the
 * issue as it was at import, JSON) and is found by it (`source_key`, `github:owner/repo#12`,
 * unique: an issue is imported once).
 */
export class RequirementSource1766546000000 implements MigrationInterface {
  name = 'RequirementSource1766546000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE requirement ADD COLUMN source varchar');
    await q.query('ALTER TABLE requirement ADD COLUMN source_key varchar');
    await q.query('CREATE UNIQUE INDEX requirement_source_key ON requirement (source_key)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX requirement_source_key');
    await q.query('ALTER TABLE requirement DROP COLUMN source_key');
    await q.query('ALTER TABLE requirement DROP COLUMN source');
  }
}
