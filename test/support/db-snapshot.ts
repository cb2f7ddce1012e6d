import * as fs from 'node:fs';
import * as path from 'node:path';

import * as sqlite3 from 'sqlite3';

const TABLES = ['agent_timer', 'agent_trigger_receipt', 'requirement', 'agent_session', 'requirement_message', 'message_attachment', 'manager_event', 'agent_run', 'pull_request'];

export interface StoreSnapshot {
  rows: Record<string, number>;
  maxEventId: number;
  attachmentFiles: string[];
}

/** Runs one read query against the manager's SQLite file (a separate, read-only connection). */
export function query<T = Record<string, unknown>>(dbPath: string, sql: string, params: unknown[] = []): Promise<T[]> {
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

/** Row counts, the newest event id and the attachment files: what "nothing written" compares. */
export async function snapshotStore(dataDirectory: string): Promise<StoreSnapshot> {
  const dbPath = path.join(dataDirectory, 'factory.sqlite');
  const rows: Record<string, number> = {};
  for (const table of TABLES) {
    const [row] = await query<{ n: number }>(dbPath, `SELECT COUNT(*) AS n FROM ${table}`);
    rows[table] = row?.n ?? 0;
  }
  const [max] = await query<{ id: number | null }>(dbPath, 'SELECT MAX(id) AS id FROM manager_event');
  const attachmentFiles = fs.readdirSync(path.join(dataDirectory, 'attachments')).sort();
  return { attachmentFiles, maxEventId: max?.id ?? 0, rows };
}
