import type { ManagerEvent } from '@libs/contracts';

import { EVENT_COLUMNS, GroupCommit, type PendingUnit, commitInserts, eventChunks, eventRow } from './group-commit';
import { bindLiterals } from './sql-literal';
import { SqliteBatch, SqliteUnitOfWork } from './sqlite-unit-of-work';
import { BatchCache } from './write-cache';

interface DoneUnit {
  pending: PendingUnit;
  uow: SqliteUnitOfWork;
  value: unknown;
}

/** node-sqlite3's connection: `exec` sends a script of statements in one call. Private to this file. */
interface SqliteConnection {
  exec(sql: string, callback: (err: Error | null) => void): void;
}

/**
 * What a failed script left: a unit whose statement failed after later units of the batch ran
 * (`cut`: those ran on its writes and run again), or no transaction at all (`lost`).
 */
type Broken = { kind: 'cut'; culprit: SqliteUnitOfWork; error: unknown } | { kind: 'lost'; error: unknown };

/** Thrown into a unit that ran after a unit whose statement failed in the same script. */
class RunAgain extends Error {
  constructor() {
    super('a unit before this one in the batch failed; it runs again in the next batch');
  }
}

/**
 * The SQLite implementation of the write queue: serialized group commit (docs/decisions.md,
 * "The write path"). Units that queue up while a commit is in flight share the next
 * transaction; each runs between `SAVEPOINT u<n>` and `RELEASE u<n>`, staged with its
 * statements, so a batch that only writes still costs one round trip to the sqlite3 thread pool.
 *
 * - A unit that throws is rolled back alone (`ROLLBACK TO u<n>` is staged, or its statements
 *   are dropped if none was sent); the other units are not run again.
 * - A script that fails names no statement, so its unit is found afterwards: only the failing
 *   unit's savepoint can still be open, and `ROLLBACK TO` succeeds for it alone. Units before it
 *   stay; the ones after it in the same script never ran in SQLite and may have built on its
 *   writes (the write cache), so they run again in the next batch, they alone.
 * - A failed COMMIT, or a failure that took the transaction with it, rejects every unit run.
 */
export class SqliteGroupCommit extends GroupCommit {
  /** Reads AUTOINCREMENT's high-water mark: ids are never reused, even after events are purged. */
  async start(): Promise<void> {
    const [row] = await this.writer.query<Array<{ seq: number }>>(
      `SELECT seq FROM sqlite_sequence WHERE name = 'manager_event'`,
    );
    this.lastEventId = Number(row?.seq ?? 0);
  }

  protected async commitBatch(pending: PendingUnit[]): Promise<PendingUnit[]> {
    const runner = this.writer.createQueryRunner();
    const connection = (await runner.connect()) as SqliteConnection;
    const exec = (sql: string) =>
      new Promise<void>((resolve, reject) => connection.exec(sql, (err) => (err ? reject(err) : resolve())));
    const cache = new BatchCache(this.cache);
    const firstEventId = this.lastEventId;
    const done: DoneUnit[] = [];
    const again: PendingUnit[] = [];
    // Set from inside flush(), hence an object: TypeScript does not track closures' writes.
    const state: { began: boolean; broken?: Broken; running?: SqliteUnitOfWork } = { began: false };

    const batch: SqliteBatch = {
      flush: async () => {
        if (batch.staged.length === 0) {
          return;
        }
        const script = `${state.began ? '' : 'BEGIN;\n'}${batch.staged.join(';\n')};`;
        const units = batch.unsent;
        batch.staged = [];
        batch.unsent = [];
        state.began = true;
        units.forEach((unit) => unit.markSent());
        try {
          await exec(script);
        } catch (err) {
          const culprit = await findCulprit(exec, units);
          if (!culprit) {
            state.broken = { error: err, kind: 'lost' };
          } else {
            culprit.failure = err;
            culprit.rolledBack = true;
            if (culprit !== state.running) {
              state.broken = { culprit, error: err, kind: 'cut' };
            }
          }
          if (state.running && state.running !== culprit) {
            state.running.failure = state.broken?.kind === 'cut' ? new RunAgain() : err;
            throw state.running.failure;
          }
          throw err;
        }
      },
      staged: [],
      unsent: [],
    };

    /** The culprit is rejected; the units after it run again; the transaction goes on. */
    const brokenNow = (): Broken | undefined => state.broken;
    const cut = ({ culprit, error }: Extract<Broken, { kind: 'cut' }>) => {
      state.broken = undefined;
      const at = done.findIndex((d) => d.uow === culprit);
      const [failed, ...after] = done.splice(at);
      failed?.pending.reject(error);
      again.unshift(...after.map((d) => d.pending));
      cache.dropFrom(culprit.position);
      this.lastEventId = culprit.firstEventId;
    };
    /** Nothing of the batch is written: every unit that ran is rejected. */
    const lose = async (error: unknown, alsoRan: PendingUnit[] = []) => {
      if (state.began) {
        await exec('ROLLBACK').catch(() => undefined); // "no transaction" when SQLite already ended it
      }
      this.lastEventId = firstEventId;
      this.logger.error(
        `write transaction failed, ${done.length + alsoRan.length} unit(s) rejected: ${(error as Error)?.message ?? String(error)}`,
      );
      for (const unit of [...done.map((d) => d.pending), ...alsoRan]) {
        unit.reject(error);
      }
      done.length = 0;
    };

    let started = 0;
    for (const unit of pending) {
      if (state.broken) {
        break;
      }
      started++;
      const uow = new SqliteUnitOfWork(batch, started, runner.manager, cache.view(started), this.eventIds);
      state.running = uow;
      let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
      try {
        outcome = { ok: true, value: await unit.unit(uow) };
      } catch (error) {
        outcome = { error, ok: false };
      }
      uow.close();
      state.running = undefined;
      const broken = brokenNow();
      if (broken?.kind === 'cut') {
        again.push(unit); // it ran on the culprit's writes
      } else if (broken?.kind === 'lost') {
        await lose(broken.error, [unit]);
        again.push(...pending.slice(started));
        return again;
      } else if (outcome.ok && uow.failure === undefined) {
        uow.release();
        cache.keep(uow.cache);
        done.push({ pending: unit, uow, value: outcome.value });
      } else {
        discard(batch, uow);
        this.lastEventId = uow.firstEventId;
        unit.reject(uow.failure ?? (outcome as { error: unknown }).error);
      }
    }
    again.push(...pending.slice(started));
    const broken = brokenNow();
    if (broken?.kind === 'cut') {
      cut(broken);
    }

    // COMMIT, with the commit-time rows and the events of the units that are still in. A failing
    // unit statement found at this point takes its unit (and those after it) out, and COMMIT is
    // tried again.
    for (;;) {
      const events = done.flatMap((d) => d.uow.events);
      const rows = commitInserts(done.map((d) => d.uow));
      if (!state.began && batch.staged.length === 0 && events.length === 0 && rows.length === 0) {
        break; // nothing to write
      }
      batch.staged.push(...rows.map((r) => bindLiterals(r.sql, r.values)), ...eventInserts(events), 'COMMIT');
      try {
        await batch.flush();
        break;
      } catch (err) {
        const broken = brokenNow();
        if (broken?.kind === 'cut') {
          cut(broken);
          continue;
        }
        await lose(err);
        return again;
      }
    }

    cache.commit();
    this.settleCommitted(done);
    return again;
  }
}

/** After a failed script: the unit whose savepoint is still open is the one whose statement failed. */
async function findCulprit(
  exec: (sql: string) => Promise<void>,
  units: SqliteUnitOfWork[],
): Promise<SqliteUnitOfWork | undefined> {
  for (const unit of units) {
    if (!unit.opened) {
      continue;
    }
    try {
      await exec(`ROLLBACK TO ${unit.savepoint}; RELEASE ${unit.savepoint}`);
      return unit;
    } catch {
      // "no such savepoint": released before the failure, or never reached
    }
  }
  return undefined;
}

/** Rolls back a unit that threw: drops what it staged, or stages ROLLBACK TO if some was sent. */
function discard(batch: SqliteBatch, uow: SqliteUnitOfWork): void {
  if (batch.unsent.at(-1) === uow) {
    batch.unsent.pop();
  }
  if (!uow.opened) {
    return;
  }
  batch.staged.length = uow.tailFrom; // the running unit's statements are the tail
  if (uow.sent && !uow.rolledBack) {
    batch.staged.push(`ROLLBACK TO ${uow.savepoint}`, `RELEASE ${uow.savepoint}`);
  }
}

/** The batch's events, as multi-row INSERTs at the end of its script. */
function eventInserts(events: ManagerEvent[]): string[] {
  return eventChunks(events).map(
    (chunk) =>
      `INSERT INTO manager_event (${EVENT_COLUMNS}) VALUES ${chunk.map((e) => bindLiterals('(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', eventRow(e))).join(', ')}`,
  );
}
