import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { DataSource } from 'typeorm';

import { MIGRATIONS } from '../core/database/migrations';
import { Search1765238400000 } from '../core/database/migrations/1765238400000-search';
import { SnakeNamingStrategy } from '../core/database/snake-naming.strategy';

/** A workspace from before search: its migration indexes every Requirement and message it already holds. */
describe('the search migration', () => {
  let dir: string;
  let db: DataSource;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-search-'));
    const before = MIGRATIONS.filter((m) => m !== Search1765238400000);
    db = await new DataSource({
      database: path.join(dir, 'f.sqlite'),
      migrations: before,
      migrationsRun: true,
      namingStrategy: new SnakeNamingStrategy(),
      type: 'sqlite',
    }).initialize();
    await db.query(`INSERT INTO requirement (id, title, description, status, provider, created_by, created_at, updated_at) VALUES
      ('req_a', 'Old title words', 'old description', 'todo', 'codex', 'human', 't1', 't1'),
      ('req_b', 'Another', '', 'todo', 'codex', 'human', 't2', 't2')`);
    await db.query(`INSERT INTO agent_session (id, requirement_id, provider, state, last_message_sequence, last_consumed_message_sequence, pending_message_count, created_at, updated_at)
      VALUES ('ses_b', 'req_b', 'codex', 'idle', 2, 0, 2, 't2', 't2')`);
    await db.query(`INSERT INTO requirement_message (id, requirement_id, session_id, author, body, sequence, deliver_to_rd, created_at) VALUES
      ('msg_1', 'req_b', 'ses_b', 'human', 'first archived remark', 1, TRUE, 't3'),
      ('msg_2', 'req_b', 'ses_b', 'human', 'second remark about words', 2, TRUE, 't4')`);
    await new Search1765238400000().up(db.createQueryRunner());
  });

  afterAll(async () => {
    await db.destroy();
    fs.rmSync(dir, { force: true, recursive: true });
  });

  const find = (match: string) =>
    db.query<Array<{ requirementId: string; messageId: string | null }>>(
      `SELECT d.requirement_id AS requirementId, d.message_id AS messageId FROM search_fts JOIN search_document d ON d.row_id = search_fts.rowid WHERE search_fts MATCH ? ORDER BY bm25(search_fts, 4.0, 1.0)`,
      [match],
    );

  it('indexes titles and descriptions as the Requirement, and each message on its own', async () => {
    expect(await find('"old"')).toEqual([{ messageId: null, requirementId: 'req_a' }]);
    expect(await find('"archived"')).toEqual([{ messageId: 'msg_1', requirementId: 'req_b' }]);
    // A title word ranks its Requirement above a message that has it too.
    expect(await find('"words"')).toEqual([
      { messageId: null, requirementId: 'req_a' },
      { messageId: 'msg_2', requirementId: 'req_b' },
    ]);
    // A message row carries no title: "Another" is found once, as the Requirement.
    expect(await find('"another"')).toEqual([{ messageId: null, requirementId: 'req_b' }]);
  });

  it('keeps the FTS5 index in step with search_document rows through its triggers, cascades included', async () => {
    await db.query(
      `INSERT INTO search_document (requirement_id, message_id, sequence, title, body) VALUES ('req_b', 'msg_3', 3, '', 'freshly added')`,
    );
    expect(await find('"freshly"')).toEqual([{ messageId: 'msg_3', requirementId: 'req_b' }]);
    await db.query(
      `UPDATE search_document SET title = 'Renamed', body = 'new text' WHERE requirement_id = 'req_a' AND message_id IS NULL`,
    );
    expect(await find('"old"')).toEqual([]);
    expect(await find('"renamed"')).toEqual([{ messageId: null, requirementId: 'req_a' }]);
    await db.query('PRAGMA foreign_keys = ON');
    await db.query(`DELETE FROM requirement WHERE id = 'req_b'`); // its documents go by cascade
    expect(await find('"freshly" OR "archived" OR "another"')).toEqual([]);
    // FTS5's own check that the index matches its content table exactly.
    await db.query(`INSERT INTO search_fts (search_fts) VALUES ('integrity-check')`);
  });
});
