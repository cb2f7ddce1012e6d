import * as fs from 'node:fs';
import * as path from 'node:path';

import * as sqlite3 from 'sqlite3';

import { onPostgres } from './db-snapshot';
import { pgSnapshot } from './postgres';

/** Runs several read queries in one read transaction (one consistent snapshot of a live database). */
export function readSnapshot(
  dbPath: string,
  queries: Record<string, string>,
): Promise<Record<string, Array<Record<string, unknown>>>> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(dbPath, sqlite3.OPEN_READONLY, (err) => {
      if (err) {
        reject(err);
        return;
      }
      const out: Record<string, Array<Record<string, unknown>>> = {};
      const entries = Object.entries(queries);
      const fail = (error: Error) => db.close(() => reject(error));
      db.exec('BEGIN', (beginErr) => {
        if (beginErr) {
          fail(beginErr);
          return;
        }
        const next = (i: number) => {
          const entry = entries[i];
          if (!entry) {
            db.exec('COMMIT', () => db.close(() => resolve(out)));
            return;
          }
          db.all(entry[1], [], (error, rows) => {
            if (error) {
              fail(new Error(`${entry[0]}: ${error.message}`));
              return;
            }
            out[entry[0]] = rows as Array<Record<string, unknown>>;
            next(i + 1);
          });
        };
        next(0);
      });
    });
  });
}

/** The invariants the store must keep whatever the API was sent; returns readable violations. */
export async function checkConsistency(dataDirectory: string): Promise<string[]> {
  const dbPath = path.join(dataDirectory, 'factory.sqlite');
  // On PostgreSQL the server checks pages and foreign keys itself; ids are integers by type, and
  // insertion order is the id order the write path assigns (no rowid).
  const pg = onPostgres();
  const r = await (pg ? pgSnapshot : readSnapshot)(dbPath, {
    integrity: pg ? "SELECT 'ok' AS integrity_check" : 'PRAGMA integrity_check',
    foreignKeys: pg ? 'SELECT 1 WHERE FALSE' : 'PRAGMA foreign_key_check',
    sessionsPerRequirement: `SELECT r.id, COUNT(s.id) AS n FROM requirement r LEFT JOIN agent_session s ON s.requirement_id = r.id GROUP BY r.id HAVING COUNT(s.id) <> 1`,
    orphanSessions: `SELECT s.id FROM agent_session s LEFT JOIN requirement r ON r.id = s.requirement_id WHERE r.id IS NULL`,
    sequences: `SELECT r.id, COUNT(m.id) AS n, COALESCE(MIN(m.sequence), 0) AS lo, COALESCE(MAX(m.sequence), 0) AS hi, COUNT(DISTINCT m.sequence) AS "distinctSeq", s.last_message_sequence AS last
                FROM requirement r JOIN agent_session s ON s.requirement_id = r.id LEFT JOIN requirement_message m ON m.requirement_id = r.id GROUP BY r.id, s.last_message_sequence`,
    messageSession: `SELECT m.id FROM requirement_message m JOIN agent_session s ON s.requirement_id = m.requirement_id WHERE m.session_id <> s.id`,
    runningRuns: `SELECT a.id, a.session_id, s.state FROM agent_run a LEFT JOIN agent_session s ON s.id = a.session_id WHERE a.status = 'running' AND a.role = 'rd' AND (s.state IS NULL OR s.state <> 'running')`,
    runningPerSession: `SELECT session_id, COUNT(*) AS n FROM agent_run WHERE status = 'running' GROUP BY session_id HAVING COUNT(*) > 1`,
    runningSessionsWithoutRun: `SELECT s.id FROM agent_session s WHERE s.state = 'running' AND NOT EXISTS (SELECT 1 FROM agent_run a WHERE a.session_id = s.id AND a.status = 'running')`,
    eventIds: pg
      ? 'SELECT id FROM manager_event ORDER BY xmin::text::bigint, id'
      : 'SELECT id FROM manager_event ORDER BY rowid',
    eventsBad: pg
      ? 'SELECT id, payload FROM manager_event' // checked below (PostgreSQL 15 has no pg_input_is_valid)
      : `SELECT id FROM manager_event WHERE typeof(id) <> 'integer' OR json_valid(payload) = 0`,
    attachments: 'SELECT id, message_id FROM message_attachment',
    // Every attachment's bytes are in the database, whole (the local files are copies).
    attachmentsWithoutBytes: `SELECT a.id FROM message_attachment a
             LEFT JOIN (SELECT attachment_id, SUM(LENGTH(bytes)) AS size FROM attachment_chunk GROUP BY attachment_id) c ON c.attachment_id = a.id
             WHERE c.attachment_id IS NULL OR c.size <> a.byte_size`,
    claimedAttachmentsElsewhere: `SELECT a.id FROM message_attachment a JOIN requirement_message m ON m.id = a.message_id WHERE m.requirement_id <> a.requirement_id`,
    consumed: `SELECT id FROM agent_session WHERE last_consumed_message_sequence > last_message_sequence OR last_consumed_message_sequence < 0 OR pending_message_count < 0`,
    counts: `SELECT (SELECT COUNT(*) FROM requirement) AS requirements, (SELECT COUNT(*) FROM requirement_message) AS messages, (SELECT COUNT(*) FROM agent_run) AS runs,
             (SELECT COUNT(*) FROM manager_event) AS events, (SELECT COUNT(*) FROM message_attachment) AS attachments, (SELECT COUNT(*) FROM agent_timer) AS timers`,
  });
  if (pg) {
    r.eventsBad = (r.eventsBad ?? []).filter((row) => !isJson(row.payload)).map((row) => ({ id: row.id }));
  }
  const problems: string[] = [];
  const rows = (key: string) => r[key] ?? [];
  const integrity = rows('integrity').map((row) => Object.values(row)[0]);
  if (integrity.length !== 1 || integrity[0] !== 'ok') {
    problems.push(`integrity_check: ${JSON.stringify(integrity)}`);
  }
  const list = (key: string, what: string) => {
    if (rows(key).length > 0) {
      problems.push(`${what}: ${JSON.stringify(rows(key).slice(0, 10))}`);
    }
  };
  list('foreignKeys', 'foreign_key_check');
  list('sessionsPerRequirement', 'requirements without exactly one agent_session');
  list('orphanSessions', 'agent_sessions without a requirement');
  list('messageSession', "messages in another session than their requirement's");
  list('runningRuns', "rd runs 'running' whose session is not 'running'");
  list('runningPerSession', 'sessions with more than one running run');
  list('runningSessionsWithoutRun', "sessions 'running' without a running run");
  list('eventsBad', 'manager_event rows with a non-integer id or invalid JSON payload');
  list('claimedAttachmentsElsewhere', 'attachments held by a message of another requirement');
  list('consumed', 'sessions whose consumed/pending counters are out of range');
  for (const row of rows('sequences')) {
    const { n, lo, hi, distinctSeq, last } = row as {
      n: number;
      lo: number;
      hi: number;
      distinctSeq: number;
      last: number;
    };
    const gapFree = n === 0 ? lo === 0 && hi === 0 : lo === 1 && hi === n && distinctSeq === n;
    if (!gapFree || last !== n) {
      problems.push(
        `message sequences of ${String(row.id)}: ${JSON.stringify(row)} (want 1..n gap-free and last_message_sequence = n)`,
      );
    }
  }
  const ids = rows('eventIds').map((row) => Number(row.id));
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) {
      problems.push(`manager_event ids not strictly increasing at ${ids[i - 1]} → ${ids[i]}`);
      break;
    }
  }
  const directory = path.join(dataDirectory, 'attachments');
  const files = fs.readdirSync(directory);
  const temp = files.filter((f) => f.startsWith('.'));
  if (temp.length > 0) {
    problems.push(`temporary upload files left behind: ${temp.join(', ')}`);
  }
  const fileIds = new Set(files.filter((f) => !f.startsWith('.')).map((f) => f.split('.')[0]));
  const rowIds = new Set(rows('attachments').map((row) => String(row.id)));
  // A row needs no file (its bytes are in the database), but a file needs its row: a local copy of a removed attachment is swept.
  const strayFiles = [...fileIds].filter((id) => !rowIds.has(id));
  list('attachmentsWithoutBytes', 'attachment rows without their whole bytes in the database');
  if (strayFiles.length > 0) {
    problems.push(`attachment files without a row: ${strayFiles.slice(0, 10).join(', ')}`);
  }
  if (problems.length === 0) {
    console.log(`store after fuzzing: ${JSON.stringify(rows('counts')[0])}, ${files.length} attachment files`);
  }
  return problems;
}

function isJson(text: unknown): boolean {
  try {
    JSON.parse(String(text));
    return true;
  } catch {
    return false;
  }
}
