import type { QueryRunner } from 'typeorm';

/**
 * Migrations are one set for both stores; they branch on this only where SQLite and PostgreSQL
 * truly differ (AUTOINCREMENT against SERIAL, a boolean default written 0 against FALSE).
 */
export function isPostgres(q: QueryRunner): boolean {
  return q.connection.driver.options.type === 'postgres';
}
