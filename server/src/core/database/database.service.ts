import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, QueryRunner, Repository } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { EventBus } from '../../events/event-bus';
import { READER_DATA_SOURCE } from './database.constants';
import { bindLiterals } from './sql-literal';
import { WriteCache } from './write-cache';
import { BatchContext, WriteTx } from './write-tx';

interface PendingUnit {
  unit: (tx: WriteTx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  /** Set after a batch failed in a way no single unit could be blamed for: run it alone. */
  solo?: boolean;
}

/** A staged script failed: the statement may belong to any unit of the batch. */
class FlushError extends Error {
  constructor(readonly cause: unknown) {
    super((cause as Error)?.message ?? String(cause));
  }
}

interface SqliteConnection {
  exec(sql: string, callback: (err: Error | null) => void): void;
}

/** Units folded into one transaction at most; bounds how long one commit can hold the lock. */
const MAX_BATCH = 128;
/** Rows kept by the write cache (a Requirement and its session are two). */
const WRITE_CACHE_ENTRIES = 4096;
const CHECKPOINT_INTERVAL_MS = 1000;
/** Rows per multi-row event INSERT (keeps one statement's text in the low megabytes). */
const EVENTS_PER_INSERT = 500;

/**
 * The one serialized write path (architecture §4). SQLite has one writer, and TypeORM's sqlite
 * driver shares one connection, so every write transaction goes through this queue. Units that
 * queue up while a commit is in flight are folded into the next transaction (group commit);
 * one unit's failure never leaves a trace of it (see commitBatch).
 *
 * Reads go to a second connection on the same file (WAL): they run in parallel with writes and
 * only ever see committed data.
 */
@Injectable()
export class Database implements BeforeApplicationShutdown, OnApplicationShutdown, OnModuleInit {
  private readonly logger = new Logger(Database.name);
  private readonly queue: PendingUnit[] = [];
  private draining: Promise<void> | null = null;
  private closed = false;
  /**
   * Event ids are handed out here rather than by SQLite, so a batch's events can be inserted
   * in one statement at commit time. This process is the only writer (instance lock), so the
   * counter cannot race; a rolled-back batch gives its ids back.
   */
  private lastEventId = 0;
  private checkpointTimer: NodeJS.Timeout | undefined;
  /** See WriteCache: valid because this process is the only writer; cleared on any rollback. */
  private readonly cache = new WriteCache(WRITE_CACHE_ENTRIES);
  private checkpointing = false;

  constructor(
    private readonly bus: EventBus,
    @InjectDataSource() private readonly writer: DataSource,
    @InjectDataSource(READER_DATA_SOURCE) private readonly reader: DataSource,
  ) {}

  /**
   * WAL with synchronous=NORMAL: a commit is durable against a crash of this process (kill -9
   * loses nothing committed); only an OS crash or power cut may lose the last commits. FULL
   * would fsync on every commit and cap writes at the disk's flush rate.
   */
  async onModuleInit(): Promise<void> {
    await this.writer.query('PRAGMA synchronous = NORMAL');
    // Checkpoints copy the WAL into the database and fsync: tens of milliseconds on a slow disk.
    // Run on the writer connection they would stall every queued write behind them, so the
    // writer never checkpoints; the read connection does it in the background (PASSIVE: it
    // never blocks the writer), on its own thread-pool thread.
    await this.writer.query('PRAGMA wal_autocheckpoint = 0');
    this.checkpointTimer = setInterval(() => void this.checkpoint(), CHECKPOINT_INTERVAL_MS);
    this.checkpointTimer.unref();
    // AUTOINCREMENT's high-water mark: ids are never reused, even after events are purged.
    const [row] = (await this.writer.query(`SELECT seq FROM sqlite_sequence WHERE name = 'manager_event'`)) as Array<{ seq: number }>;
    this.lastEventId = Number(row?.seq ?? 0);
  }

  /** A repository on the read connection: committed data only, never blocked by writes. */
  read<T extends ObjectLiteral>(entity: EntityTarget<T>): Repository<T> {
    return this.reader.getRepository(entity);
  }

  /** The read connection's manager, for raw read queries. */
  get readManager(): EntityManager {
    return this.reader.manager;
  }

  /**
   * Runs `unit` in the serialized write path. Resolves with its result after the commit and
   * after its events were published; rejects (with nothing written) if the unit throws.
   */
  write<T>(unit: (tx: WriteTx) => Promise<T>): Promise<T> {
    if (this.closed) {
      return Promise.reject(new Error('database is shutting down'));
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ reject, resolve: resolve as (value: unknown) => void, unit });
      this.draining ??= this.drain();
    });
  }

  /** Before the HTTP server closes: finish what was accepted so far. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.draining;
  }

  /** After it closed (no request in flight): finish the rest, then refuse new work. */
  async onApplicationShutdown(): Promise<void> {
    await this.draining;
    this.closed = true;
    clearInterval(this.checkpointTimer);
    await this.checkpoint();
  }

  private async checkpoint(): Promise<void> {
    if (this.checkpointing || !this.reader.isInitialized) {
      return;
    }
    this.checkpointing = true;
    try {
      await this.reader.query('PRAGMA wal_checkpoint(PASSIVE)');
    } catch (err) {
      this.logger.warn({ error: (err as Error).message, msg: 'WAL checkpoint failed; will retry' });
    } finally {
      this.checkpointing = false;
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue[0]?.solo ? this.queue.splice(0, 1) : this.queue.splice(0, MAX_BATCH);
        await this.commitBatch(batch);
      }
    } finally {
      this.draining = null;
    }
  }

  /**
   * Runs a batch in one transaction. Units stage their writes; the batch sends them as one
   * script before a read needs them and at COMMIT, so a batch of units that only write costs
   * one round trip to the sqlite3 thread pool in all (measured ≈0.5 ms each under load here).
   *
   * There are no per-unit savepoints. If a unit throws, the transaction is rolled back, that
   * unit alone is rejected and the others go back to the front of the queue to run again:
   * units touch the database only through their WriteTx, so running one again is safe, and
   * each retry removes one failing unit. If a script fails, the statement may be any unit's,
   * so the batch's units run again one by one.
   */
  private async commitBatch(batch: PendingUnit[]): Promise<void> {
    const runner: QueryRunner = this.writer.createQueryRunner();
    const connection = (await runner.connect()) as SqliteConnection;
    const exec = (sql: string) => new Promise<void>((resolve, reject) => connection.exec(sql, (err) => (err ? reject(err) : resolve())));
    const context: BatchContext = {
      began: false,
      flush: async () => {
        if (context.staged.length === 0) {
          return;
        }
        const script = `${context.began ? '' : 'BEGIN;\n'}${context.staged.join(';\n')};`;
        context.staged = [];
        context.began = true;
        try {
          await exec(script);
        } catch (err) {
          throw new FlushError(err);
        }
      },
      staged: [],
    };
    const firstEventId = this.lastEventId;
    const nextEventId = () => ++this.lastEventId;
    const abort = async () => {
      if (context.began) {
        await exec('ROLLBACK;').catch(() => undefined); // "no transaction" when the script failed at BEGIN
      }
      this.cache.clear();
      this.lastEventId = firstEventId;
    };

    const done: Array<{ unit: PendingUnit; tx: WriteTx; value: unknown }> = [];
    for (const [index, unit] of batch.entries()) {
      const tx = new WriteTx(context, runner.manager, nextEventId, this.cache);
      try {
        done.push({ tx, unit, value: await unit.unit(tx) });
      } catch (err) {
        await abort();
        if (err instanceof FlushError && batch.length > 1) {
          this.queue.unshift(...batch.map((u) => ({ ...u, solo: true })));
          return;
        }
        unit.reject(err instanceof FlushError ? err.cause : err);
        this.queue.unshift(...batch.slice(0, index), ...batch.slice(index + 1));
        return;
      }
    }
    const events = done.flatMap(({ tx }) => tx.events);
    if (events.length > 0 || context.staged.length > 0 || context.began) {
      this.stageEvents(context, events);
      context.staged.push('COMMIT');
      try {
        await context.flush();
      } catch (err) {
        await abort();
        if (batch.length > 1) {
          this.queue.unshift(...batch.map((u) => ({ ...u, solo: true })));
          return;
        }
        this.logger.error(`commit failed: ${(err as Error).message}`);
        done.forEach(({ unit }) => unit.reject(err instanceof FlushError ? err.cause : err));
        return;
      }
    }
    // Published after commit, in id order: units ran in order and ids grow within the batch.
    for (const { tx, unit, value } of done) {
      for (const event of tx.events) {
        this.bus.publish(event);
      }
      for (const hook of tx.afterCommitHooks) {
        try {
          hook();
        } catch (err) {
          this.logger.error(`after-commit hook failed: ${(err as Error).message}`, (err as Error).stack);
        }
      }
      unit.resolve(value);
    }
  }

  /** The batch's events, as multi-row INSERTs at the end of its script. */
  private stageEvents(context: BatchContext, events: ManagerEvent[]): void {
    const columns = 'id, type, requirement_id, session_id, run_id, actor_kind, actor_id, payload, created_at';
    for (let start = 0; start < events.length; start += EVENTS_PER_INSERT) {
      const rows = events
        .slice(start, start + EVENTS_PER_INSERT)
        .map((e) =>
          bindLiterals('(?, ?, ?, ?, ?, ?, ?, ?, ?)', [e.id, e.type, e.requirementId, e.sessionId, e.runId, e.actor.kind, e.actor.id, JSON.stringify(e.payload), e.createdAt]),
        );
      context.staged.push(`INSERT INTO manager_event (${columns}) VALUES ${rows.join(', ')}`);
    }
  }
}
