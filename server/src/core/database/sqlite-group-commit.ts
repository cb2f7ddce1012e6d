import type { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { bindLiterals } from './sql-literal';
import { SqliteBatch, SqliteUnitOfWork } from './sqlite-unit-of-work';
import type { Unit, WriteQueue } from './unit-of-work';
import { BatchCache, WriteCache } from './write-cache';

interface PendingUnit {
  unit: Unit<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

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

/** Units folded into one transaction at most; bounds how long one commit can hold the lock. */
const MAX_BATCH = 128;
/** Rows kept by the write cache (a Requirement and its session are two). */
const WRITE_CACHE_ENTRIES = 4096;
/** Rows per multi-row event INSERT (keeps one statement's text in the low megabytes). */
const EVENTS_PER_INSERT = 500;
const EVENT_COLUMNS = 'id, type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at';

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
export class SqliteGroupCommit implements WriteQueue {
  private readonly queue: PendingUnit[] = [];
  private draining: Promise<void> | null = null;
  /**
   * Event ids are handed out here rather than by SQLite, so a batch's events can be inserted in
   * one statement at commit time. Units run one after another and this process is the only
   * writer (instance lock), so a unit that rolls back gives back exactly the ids it took.
   */
  private lastEventId = 0;
  private readonly eventIds = { next: () => ++this.lastEventId, peek: () => this.lastEventId };
  private readonly cache = new WriteCache(WRITE_CACHE_ENTRIES);

  constructor(
    private readonly writer: DataSource,
    private readonly publish: (event: ManagerEvent) => void,
    private readonly logger: Logger,
  ) {}

  /** Reads AUTOINCREMENT's high-water mark: ids are never reused, even after events are purged. */
  async start(): Promise<void> {
    const [row] = await this.writer.query<Array<{ seq: number }>>(`SELECT seq FROM sqlite_sequence WHERE name = 'manager_event'`);
    this.lastEventId = Number(row?.seq ?? 0);
  }

  write<T>(unit: Unit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ reject, resolve: resolve as (value: unknown) => void, unit });
      this.draining ??= this.drain();
    });
  }

  /** Settles once everything queued so far (and queued meanwhile) has run. */
  async idle(): Promise<void> {
    await this.draining;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        await this.commitBatch(this.queue.splice(0, MAX_BATCH));
      }
    } finally {
      this.draining = null;
    }
  }

  private async commitBatch(pending: PendingUnit[]): Promise<void> {
    const runner = this.writer.createQueryRunner();
    const connection = (await runner.connect()) as SqliteConnection;
    const exec = (sql: string) => new Promise<void>((resolve, reject) => connection.exec(sql, (err) => (err ? reject(err) : resolve())));
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
      this.logger.error(`write transaction failed, ${done.length + alsoRan.length} unit(s) rejected: ${(error as Error)?.message ?? String(error)}`);
      for (const unit of [...done.map((d) => d.pending), ...alsoRan]) {
        unit.reject(error);
      }
      done.length = 0;
    };

    try {
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
          return;
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

      // COMMIT, with the events of the units that are still in. A failing unit statement found
      // at this point takes its unit (and those after it) out, and COMMIT is tried again.
      for (;;) {
        const events = done.flatMap((d) => d.uow.events);
        if (!state.began && batch.staged.length === 0 && events.length === 0) {
          break; // nothing to write
        }
        batch.staged.push(...eventInserts(events), 'COMMIT');
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
          return;
        }
      }

      cache.commit();
      // Published after commit, in id order: units ran in order and ids grow along the batch.
      for (const { pending: unit, uow, value } of done) {
        for (const event of uow.events) {
          this.publish(event);
        }
        for (const hook of uow.afterCommitHooks) {
          try {
            hook();
          } catch (err) {
            this.logger.error(`after-commit hook failed: ${(err as Error).message}`, (err as Error).stack);
          }
        }
        unit.resolve(value);
      }
    } finally {
      // Ahead of anything queued meanwhile: arrival order is kept.
      this.queue.unshift(...again);
    }
  }
}

/** After a failed script: the unit whose savepoint is still open is the one whose statement failed. */
async function findCulprit(exec: (sql: string) => Promise<void>, units: SqliteUnitOfWork[]): Promise<SqliteUnitOfWork | undefined> {
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
  const statements: string[] = [];
  for (let start = 0; start < events.length; start += EVENTS_PER_INSERT) {
    const rows = events
      .slice(start, start + EVENTS_PER_INSERT)
      .map((e) =>
        bindLiterals('(?, ?, ?, ?, ?, ?, ?, ?, ?)', [e.id, e.type, e.requirementId, e.sessionId, e.runId, e.actor.kind, e.actor.id, JSON.stringify(e.payload), e.createdAt]),
      );
    statements.push(`INSERT INTO manager_event (${EVENT_COLUMNS}) VALUES ${rows.join(', ')}`);
  }
  return statements;
}
