import { MigrationInterface, QueryRunner } from 'typeorm';

/** The model catalog's persisted listings, one row per provider (issue 17 §4). */
export class ModelCatalog1765756800000 implements MigrationInterface {
  name = 'ModelCatalog1765756800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE model_catalog_source (
      provider varchar PRIMARY KEY NOT NULL,
      models text NOT NULL,
      refreshed_at varchar,
      attempted_at varchar,
      error text
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE model_catalog_source');
  }
}
