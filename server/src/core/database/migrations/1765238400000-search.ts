import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 16 §1: full-text search over titles, descriptions and every conversation message.
 * `search_document` maps an index row to its Requirement and message (gone with the
 * Requirement: ON DELETE CASCADE); `search_fts` is SQLite's FTS5 index holding the text
 * (rowid = search_document.row_id). Filled here from what exists; the requirements and
 * messages repositories keep both in step in the transactions that write the rows.
 */
export class Search1765238400000 implements MigrationInterface {
  name = 'Search1765238400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE search_document (
      row_id integer PRIMARY KEY AUTOINCREMENT NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      message_id varchar,
      sequence integer
    )`);
    await q.query(`CREATE INDEX idx_search_document_requirement ON search_document (requirement_id, message_id)`);
    // unicode61 folds case and (remove_diacritics 2) accents, so "resume" finds "Résumé". Prefix
    // indexes answer a short last word while typing; search_vocab lists the terms, so a longer one
    // is completed to the terms it starts (a prefix query over them would merge whole doclists).
    await q.query(`CREATE VIRTUAL TABLE search_fts USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4')`);
    await q.query(`CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_fts, 'row')`);
    await q.query(`INSERT INTO search_document (requirement_id, message_id, sequence) SELECT id, NULL, NULL FROM requirement ORDER BY created_at, id`);
    await q.query(
      `INSERT INTO search_document (requirement_id, message_id, sequence) SELECT requirement_id, id, sequence FROM requirement_message ORDER BY requirement_id, sequence`,
    );
    await q.query(
      `INSERT INTO search_fts (rowid, title, body)
         SELECT d.row_id, CASE WHEN d.message_id IS NULL THEN r.title ELSE '' END, COALESCE(m.body, r.description)
           FROM search_document d JOIN requirement r ON r.id = d.requirement_id LEFT JOIN requirement_message m ON m.id = d.message_id`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE search_vocab');
    await q.query('DROP TABLE search_fts');
    await q.query('DROP TABLE search_document');
  }
}
