import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from './support/api';
import { onPostgres } from './support/db-snapshot';
import { checkConsistency } from './support/fuzz-db';
import { sendUntyped } from './support/http';
import { ManagerProcess, Sandbox, makeSandbox, runLauncher, startManager } from './support/manager-process';
import { pgQuery } from './support/postgres';

jest.setTimeout(600_000);

/** The manager on the workspace's SQLite file, whatever TEST_DATABASE_URL says (the copy's source). */
const ON_SQLITE = { CODE_FACTORY_DATABASE_URL: '' };
const REQUIREMENTS = 10_000;
const MESSAGES_EACH = 10;

/**
 * `agent-manager db copy --to postgres://…` (docs/postgresql.md): a workspace with 10,000
 * Requirements and 100,000 messages moves from its SQLite file into its PostgreSQL schema, the
 * copy passes the store's consistency checks, and a manager started on it answers as the SQLite
 * one did, with event ids going on from where they were. Runs with TEST_DATABASE_URL (as in
 * `npm run test:postgres`).
 */
(onPostgres() ? describe : describe.skip)('db copy from SQLite to PostgreSQL', () => {
  const url = process.env.TEST_DATABASE_URL as string;
  let sandbox: Sandbox;
  let manager: ManagerProcess | undefined;

  beforeAll(() => {
    sandbox = makeSandbox();
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox.cleanup();
  });

  it('moves a workspace of 10,000 Requirements and 100,000 messages, consistent, answering as before', async () => {
    // Rows of most kinds through the API: a fork, a dependency, a timer, an attachment.
    manager = await startManager({ env: ON_SQLITE, sandbox });
    const make = async (title: string) =>
      (
        await ok(
          manager!.api.POST('/api/requirements', { body: { description: `About ${title}`, provider: 'codex', title } }),
        )
      ).id;
    const first = await make('First, with an attachment and a timer');
    const second = await make('Second, depending on the first');
    expect(
      (
        await manager.api.PUT('/api/requirements/{id}/dependencies', {
          params: { path: { id: second } },
          body: { dependsOn: [{ requirementId: first, until: 'done' }] },
        })
      ).status,
    ).toBe(200);
    expect(
      (await manager.api.POST('/api/requirements/{id}/fork', { params: { path: { id: first } }, body: {} })).status,
    ).toBe(201);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/timers', {
          params: { path: { id: first } },
          body: { description: 'look again', intervalSeconds: 3600, schedule: 'once' },
        })
      ).status,
    ).toBe(201);
    // Its content type as sent on the wire: untyped on purpose.
    const upload = await sendUntyped(manager.origin, 'POST', `/api/requirements/${first}/attachments`, 'notes with é', {
      'Content-Type': 'text/plain',
      'X-File-Name': 'notes.txt',
    });
    expect(upload.status).toBe(201);
    await manager.stop();
    manager = undefined;

    // The bulk, straight into the file: a tenth of the Requirements name a parent written after them.
    const db = path.join(sandbox.home, 'workspaces', path.basename(await dataDirectoryOf(sandbox)), 'factory.sqlite');
    await seed(db);
    const sqliteCounts = await counts(db, false);
    const [{ top: lastEventBefore }] = await sqliteQuery(db, 'SELECT MAX(id) AS top FROM manager_event');
    expect(sqliteCounts).toMatchObject({ messages: REQUIREMENTS * MESSAGES_EACH, requirements: REQUIREMENTS + 3 });

    // What the SQLite manager answers, to compare with the PostgreSQL one.
    manager = await startManager({ env: ON_SQLITE, sandbox });
    const reads = [
      '/api/requirements?limit=50',
      `/api/requirements/${first}`,
      `/api/requirements/${second}`,
      '/api/requirements/req_seed-00010',
      '/api/requirements/req_seed-00011/messages?limit=200',
      '/api/timers?limit=50',
    ];
    // Many routes' answers compared whole before and after the move, as opaque JSON: untyped on purpose.
    const before = await Promise.all(reads.map(async (p) => (await sendUntyped(manager!.origin, 'GET', p)).json));

    // Refused while the workspace's manager runs: the source must not change under the copy.
    const whileRunning = await runLauncher(sandbox, ['db', 'copy', '--to', url, '--workspace', sandbox.workspace]);
    expect(whileRunning.code).toBe(1);
    expect(whileRunning.stderr).toContain('already running for this workspace');
    await manager.stop();
    manager = undefined;

    const bad = await runLauncher(sandbox, ['db', 'copy', '--workspace', sandbox.workspace]);
    expect(bad).toMatchObject({ code: 1 });
    expect(bad.stderr).toContain('--to postgres://');

    const copy = await runLauncher(sandbox, ['db', 'copy', '--to', url, '--workspace', sandbox.workspace], {}, 540_000);
    expect({ code: copy.code, stderr: copy.stderr }).toEqual({ code: 0, stderr: '' });
    expect(copy.stdout).toContain(`requirement: ${REQUIREMENTS + 3} rows`);
    expect(copy.stdout).toContain(`requirement_message: ${REQUIREMENTS * MESSAGES_EACH} rows`);
    expect(copy.stdout).toContain('both stores compared equal');
    expect(copy.stdout).not.toMatch(/password/);
    console.log(copy.stdout.split('\n').find((line) => line.startsWith('Copied')));

    const dataDirectory = await dataDirectoryOf(sandbox);
    expect(await checkConsistency(dataDirectory)).toEqual([]);
    expect(await counts(path.join(dataDirectory, 'factory.sqlite'), true)).toEqual(sqliteCounts);
    const [{ orphans }] = await pgQuery<{ orphans: number }>(
      dataDirectory,
      `SELECT COUNT(*) AS orphans FROM requirement c LEFT JOIN requirement p ON p.id = c.parent_requirement_id WHERE c.parent_requirement_id IS NOT NULL AND p.id IS NULL`,
    );
    const [{ parents }] = await pgQuery<{ parents: number }>(
      dataDirectory,
      'SELECT COUNT(*) AS parents FROM requirement WHERE parent_requirement_id IS NOT NULL',
    );
    expect({ orphans, parents }).toEqual({ orphans: 0, parents: REQUIREMENTS / 10 });

    // A second copy into the same schema is refused, and changes nothing.
    const again = await runLauncher(
      sandbox,
      ['db', 'copy', '--to', url, '--workspace', sandbox.workspace],
      {},
      120_000,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already holds data');

    // The manager on PostgreSQL answers what the SQLite one did, and its event ids go on after the copied ones.
    manager = await startManager({ env: { CODE_FACTORY_DATABASE_URL: url }, sandbox });
    const after = await Promise.all(reads.map(async (p) => (await sendUntyped(manager!.origin, 'GET', p)).json));
    expect(after).toEqual(before);
    // Served from the copied bytes, not from the local copy the upload left.
    fs.rmSync(path.join(dataDirectory, 'attachments', `${upload.json.id}.txt`));
    const attachment = await manager.api.GET('/api/attachments/{id}', {
      params: { path: { id: upload.json.id } },
      parseAs: 'text',
    });
    expect(attachment.status).toBe(200);
    expect(attachment.data).toBe('notes with é');
    const made = await manager.api.POST('/api/requirements', {
      body: { description: 'd', provider: 'codex', title: 'after the move' },
    });
    expect(made.status).toBe(201);
    const [{ id: createdEvent }] = await pgQuery<{ id: number }>(
      dataDirectory,
      `SELECT id FROM manager_event WHERE type = 'requirement.created' AND requirement_id = ?`,
      [made.data!.id],
    );
    expect(createdEvent).toBeGreaterThan(lastEventBefore);
  });
});

async function dataDirectoryOf(sandbox: Sandbox): Promise<string> {
  const fs = await import('node:fs');
  const workspaces = path.join(sandbox.home, 'workspaces');
  const [key] = fs.readdirSync(workspaces).filter((k) => /^[0-9a-f]{16}$/.test(k));
  return path.join(workspaces, key);
}

/** Row counts on the SQLite file, or (pg) on the workspace's schema. */
async function counts(db: string, pg: boolean): Promise<Record<string, number>> {
  const sql = `SELECT (SELECT COUNT(*) FROM requirement) AS requirements, (SELECT COUNT(*) FROM agent_session) AS sessions, (SELECT COUNT(*) FROM requirement_message) AS messages,
                      (SELECT COUNT(*) FROM manager_event) AS events, (SELECT COUNT(*) FROM search_document) AS documents, (SELECT COUNT(*) FROM agent_timer) AS timers,
                      (SELECT COUNT(*) FROM requirement_dependency) AS dependencies, (SELECT COUNT(*) FROM message_attachment) AS attachments`;
  const [row] = pg ? await pgQuery<Record<string, number>>(db, sql) : await sqliteQuery(db, sql);
  return row;
}

async function sqliteQuery(db: string, sql: string): Promise<Array<Record<string, number>>> {
  // `query` goes to PostgreSQL when TEST_DATABASE_URL is set; the source is the file.
  const sqlite3 = await import('sqlite3');
  return new Promise((resolve, reject) => {
    const handle = new sqlite3.Database(db, sqlite3.OPEN_READONLY, (err) => {
      if (err) {
        reject(err);
        return;
      }
      handle.all(sql, [], (error, rows) =>
        handle.close(() => (error ? reject(error) : resolve(rows as Array<Record<string, number>>))),
      );
    });
  });
}

/** 10,000 Requirements with their sessions, search documents and 10 messages each, in one transaction. */
async function seed(db: string): Promise<void> {
  const sqlite3 = await import('sqlite3');
  const handle = new sqlite3.Database(db);
  const exec = (sql: string) =>
    new Promise<void>((resolve, reject) => handle.exec(sql, (err) => (err ? reject(err) : resolve())));
  const at = `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-20T00:00:00Z', '+' || i || ' seconds')`;
  try {
    await exec(`BEGIN;
      CREATE TEMP TABLE n (i INTEGER PRIMARY KEY);
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${REQUIREMENTS}) INSERT INTO n SELECT i FROM s;
      INSERT INTO requirement (id, title, description, status, provider, model, reasoning_effort, created_by, parent_requirement_id, source_session_id, created_at, updated_at, completed_at)
        SELECT printf('req_seed-%05d', i), 'Seeded ' || i, 'Measure segment ' || (i % 97) || ' — naïve «quotes» ''and'' 😀', CASE i % 3 WHEN 0 THEN 'done' WHEN 1 THEN 'todo' ELSE 'waiting_confirmation' END,
          CASE i % 2 WHEN 0 THEN 'codex' ELSE 'claude' END, CASE WHEN i % 7 = 0 THEN 'gpt-5' END, NULL, 'human',
          CASE WHEN i % 10 = 0 THEN printf('req_seed-%05d', CASE WHEN i = ${REQUIREMENTS} THEN 1 ELSE i + 1 END) END, NULL, ${at}, ${at}, CASE WHEN i % 3 = 0 THEN ${at} END
        FROM n ORDER BY i;
      INSERT INTO agent_session (id, requirement_id, provider, native_session_id, state, last_error, last_consumed_message_sequence, pending_message_count, last_message_sequence, created_at, updated_at)
        SELECT printf('ses_seed-%05d', i), printf('req_seed-%05d', i), CASE i % 2 WHEN 0 THEN 'codex' ELSE 'claude' END, NULL, CASE i % 3 WHEN 0 THEN 'completed' ELSE 'waiting_human' END, NULL,
          ${MESSAGES_EACH}, 0, ${MESSAGES_EACH}, ${at}, ${at}
        FROM n ORDER BY i;
      INSERT INTO requirement_message (id, requirement_id, session_id, run_id, source_requirement_id, author, body, sequence, deliver_to_rd, source, trigger_id, metadata, created_at)
        SELECT printf('msg_seed-%05d-%02d', n.i, k.i), printf('req_seed-%05d', n.i), printf('ses_seed-%05d', n.i), NULL, NULL, CASE k.i % 2 WHEN 1 THEN 'human' ELSE 'rd_agent' END,
          'Message ' || k.i || ' of ' || n.i || char(10) || '**bold** and a tab' || char(9) || 'x', k.i, k.i % 2, NULL, NULL, CASE WHEN k.i = 3 THEN '{"note":"meta"}' END,
          strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-20T00:00:00Z', '+' || (n.i + k.i / 100.0) || ' seconds')
        FROM n JOIN n AS k ON k.i <= ${MESSAGES_EACH} ORDER BY n.i, k.i;
      INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT id, NULL, NULL, title, description FROM requirement WHERE id LIKE 'req_seed-%' ORDER BY rowid;
      INSERT INTO search_document (requirement_id, message_id, sequence, title, body) SELECT requirement_id, id, sequence, '', body FROM requirement_message WHERE id LIKE 'msg_seed-%' ORDER BY rowid;
      DROP TABLE n;
      COMMIT;`);
  } finally {
    await new Promise<void>((resolve) => handle.close(() => resolve()));
  }
}
