import * as fs from 'node:fs';
import * as path from 'node:path';

import * as sqlite3 from 'sqlite3';

import { pgQuery, pgSnapshot } from './postgres';

const TABLES = [
  'agent_timer',
  'agent_trigger_receipt',
  'requirement',
  'agent_session',
  'requirement_message',
  'message_attachment',
  'attachment_chunk',
  'manager_event',
  'agent_run',
  'pull_request',
];

export interface StoreSnapshot {
  rows: Record<string, number>;
  maxEventId: number;
  attachmentFiles: string[];
}

/**
 * The suites' store: the manager's SQLite file by default, or its workspace schema on the
 * PostgreSQL server `TEST_DATABASE_URL` names (every manager the suites start then uses it).
 * `query` and `execute` take a path to the SQLite file either way (its directory names the
 * workspace, and so the schema) and `?` placeholders; SQL that differs is chosen with `onPostgres()`.
 */
export function onPostgres(): boolean {
  return Boolean(process.env.TEST_DATABASE_URL);
}

/** Runs one read query against the manager's SQLite file (a separate, read-only connection), or its PostgreSQL schema. */
export function query<T = Record<string, unknown>>(dbPath: string, sql: string, params: unknown[] = []): Promise<T[]> {
  if (onPostgres()) {
    return pgQuery<T>(dbPath, sql, params);
  }
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(dbPath, sqlite3.OPEN_READONLY, (err) => {
      if (err) {
        reject(err);
        return;
      }
      db.all(sql, params, (error, rows) => {
        db.close();
        if (error) {
          reject(error);
        } else {
          resolve(rows as T[]);
        }
      });
    });
  });
}

/** Runs one write statement against a stopped manager's SQLite file (tests that simulate time passing). */
export function execute(dbPath: string, sql: string, params: unknown[] = []): Promise<void> {
  if (onPostgres()) {
    return pgQuery(dbPath, sql, params).then(() => undefined);
  }
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(dbPath, (err) => {
      if (err) {
        reject(err);
        return;
      }
      db.run(sql, params, (error) => {
        db.close();
        if (error) {
          reject(error);
        } else {
          resolve();
        }
      });
    });
  });
}

/**
 * Events the manager writes at its own pace, left out of the event counts with `exceptBackground`
 * since a refused request can land beside them: a run's trace lines (run.trace.appended, from a
 * run already going), and the system's own jobs — the conflict radar's summary
 * (landing.conflicts.updated, written alone when the Requirements it looked at were removed
 * meanwhile), the model catalog's refresh (model_catalog.updated, at start and hourly) and Needs
 * you's items (attention.opened / .cleared: the reaction to what an earlier request changed). No
 * refused request writes any of them; a CI run saw one event with no row beside it (most likely
 * one of these two) land inside a refusal of test/agent-requirements.e2e-spec.ts.
 */
const BACKGROUND_EVENTS =
  "FROM manager_event WHERE type <> 'run.trace.appended' AND NOT (actor_kind = 'system' AND type IN ('landing.conflicts.updated', 'model_catalog.updated', 'attention.opened', 'attention.cleared'))";

/** Row counts, the newest event id and the attachment files: what "nothing written" compares. */
export async function snapshotStore(dataDirectory: string, { exceptBackground = false } = {}): Promise<StoreSnapshot> {
  const events = exceptBackground ? BACKGROUND_EVENTS : 'FROM manager_event';
  const dbPath = path.join(dataDirectory, 'factory.sqlite');
  const rows: Record<string, number> = {};
  const attachmentFiles = fs.readdirSync(path.join(dataDirectory, 'attachments')).sort();
  if (onPostgres()) {
    // One connection and one snapshot: as quick as the SQLite file's reads, so the window for a concurrent write is as small.
    const r = await pgSnapshot(dbPath, {
      ...Object.fromEntries(
        TABLES.map((t) => [
          t,
          t === 'manager_event' ? `SELECT COUNT(*) AS n ${events}` : `SELECT COUNT(*) AS n FROM ${t}`,
        ]),
      ),
      max: `SELECT MAX(id) AS id ${events}`,
    });
    for (const table of TABLES) {
      rows[table] = Number(r[table]?.[0]?.n ?? 0);
    }
    return { attachmentFiles, maxEventId: Number(r.max?.[0]?.id ?? 0), rows };
  }
  for (const table of TABLES) {
    const [row] = await query<{ n: number }>(
      dbPath,
      table === 'manager_event' ? `SELECT COUNT(*) AS n ${events}` : `SELECT COUNT(*) AS n FROM ${table}`,
    );
    rows[table] = row?.n ?? 0;
  }
  const [max] = await query<{ id: number | null }>(dbPath, `SELECT MAX(id) AS id ${events}`);
  return { attachmentFiles, maxEventId: max?.id ?? 0, rows };
}
