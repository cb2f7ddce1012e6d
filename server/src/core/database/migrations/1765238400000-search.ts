import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 16 §1: full-text search over titles, descriptions and every conversation message.
 * `search_document` holds each searchable text with the Requirement and message it came from
 * (gone with the Requirement: ON DELETE CASCADE), written by the requirements and messages
 * repositories in the units that write those rows. It is filled here from what exists.
 *
 * SQLite: `search_fts` is an FTS5 index over it (external content: the text is stored once, in
 * search_document), kept in step by triggers, so the repositories write plain rows on both
 * stores. PostgreSQL: a GIN index over the same text's tsvector.
 */
export class Search1765238400000 implements MigrationInterface {
  name = 'Search1765238400000';

  async up(q: QueryRunner): Promise<void> {
    const postgres = q.connection.driver.options.type === 'postgres';
    await q.query(`CREATE TABLE search_document (
      row_id ${postgres ? 'SERIAL PRIMARY KEY' : 'integer PRIMARY KEY AUTOINCREMENT NOT NULL'},
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      message_id varchar,
      sequence integer,
      title text NOT NULL,
      body text NOT NULL
    )`);
    await q.query(`CREATE INDEX idx_search_document_requirement ON search_document (requirement_id, message_id)`);
    if (postgres) {
      await q.query(
        `CREATE INDEX idx_search_document_text ON search_document USING GIN (to_tsvector('simple', title || ' ' || body))`,
      );
    } else {
      // unicode61 folds case and (remove_diacritics 2) accents, so "resume" finds "Résumé". Prefix
      // indexes answer a short last word while typing; search_vocab lists the terms, so a longer one
      // is completed to the terms it starts (a prefix query over them would merge whole doclists).
      await q.query(
        `CREATE VIRTUAL TABLE search_fts USING fts5(title, body, content = 'search_document', content_rowid = 'row_id', tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4')`,
      );
      await q.query(`CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_fts, 'row')`);
      await q.query(`CREATE TRIGGER search_document_insert AFTER INSERT ON search_document BEGIN
        INSERT INTO search_fts (rowid, title, body) VALUES (new.row_id, new.title, new.body); END`);
      await q.query(`CREATE TRIGGER search_document_delete AFTER DELETE ON search_document BEGIN
        INSERT INTO search_fts (search_fts, rowid, title, body) VALUES ('delete', old.row_id, old.title, old.body); END`);
      await q.query(`CREATE TRIGGER search_document_update AFTER UPDATE ON search_document BEGIN
        INSERT INTO search_fts (search_fts, rowid, title, body) VALUES ('delete', old.row_id, old.title, old.body);
        INSERT INTO search_fts (rowid, title, body) VALUES (new.row_id, new.title, new.body); END`);
    }
    await q.query(
      `INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT id, NULL, NULL, title, description FROM requirement ORDER BY created_at, id`,
    );
    await q.query(
      `INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT requirement_id, id, sequence, '', body FROM requirement_message ORDER BY requirement_id, sequence`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.driver.options.type !== 'postgres') {
      await q.query('DROP TABLE search_vocab');
      await q.query('DROP TABLE search_fts');
    }
    await q.query('DROP TABLE search_document');
  }
}
