import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, QueryRunner, Repository } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { EventBus } from '../../events/event-bus';
import { READER_DATA_SOURCE } from './database.constants';
import { WriteTx } from './write-tx';

interface PendingUnit {
  unit: (tx: WriteTx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** Units folded into one transaction at most; bounds how long one commit can hold the lock. */
const MAX_BATCH = 128;
const CHECKPOINT_INTERVAL_MS = 1000;
/** 9 parameters per event; SQLite allows 32,766 per statement. */
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
        const batch = this.queue.splice(0, MAX_BATCH);
        await this.commitBatch(batch);
      }
    } finally {
      this.draining = null;
    }
  }

  /**
   * Runs a batch in one transaction without per-unit savepoints (each would cost two more
   * round trips to the sqlite3 thread pool per unit). If a unit throws, the whole transaction
   * is rolled back, that unit alone is rejected, and the others go back to the front of the
   * queue to run again: units only touch the database through their WriteTx, so running one
   * again is safe, and each retry removes one failing unit, so the queue always progresses.
   */
  /** The batch's events in as few statements as SQLite's parameter limit allows. */
  private async insertEvents(runner: QueryRunner, events: ManagerEvent[]): Promise<void> {
    const columns = ['id', 'type', 'requirement_id', 'session_id', 'run_id', 'actor_kind', 'actor_id', 'payload', 'created_at'];
    for (let start = 0; start < events.length; start += EVENTS_PER_INSERT) {
      const chunk = events.slice(start, start + EVENTS_PER_INSERT);
      const params = chunk.flatMap((e) => [e.id, e.type, e.requirementId, e.sessionId, e.runId, e.actor.kind, e.actor.id, JSON.stringify(e.payload), e.createdAt]);
      const rows = chunk.map(() => `(${columns.map(() => '?').join(',')})`).join(',');
      await runner.query(`INSERT INTO manager_event (${columns.join(',')}) VALUES ${rows}`, params);
    }
  }

  private async commitBatch(batch: PendingUnit[]): Promise<void> {
    const runner: QueryRunner = this.writer.createQueryRunner();
    const done: Array<{ unit: PendingUnit; tx: WriteTx; value: unknown }> = [];
    const firstEventId = this.lastEventId;
    const nextEventId = () => ++this.lastEventId;
    try {
      await runner.startTransaction();
    } catch (err) {
      batch.forEach((unit) => unit.reject(err));
      return;
    }
    for (const [index, unit] of batch.entries()) {
      const tx = new WriteTx(runner.manager, nextEventId);
      try {
        done.push({ tx, unit, value: await unit.unit(tx) });
      } catch (err) {
        await runner.rollbackTransaction().catch((rollbackError: unknown) => {
          this.logger.error(`rollback failed: ${(rollbackError as Error).message}`);
        });
        this.lastEventId = firstEventId;
        unit.reject(err);
        this.queue.unshift(...batch.slice(0, index), ...batch.slice(index + 1));
        return;
      }
    }
    try {
      await this.insertEvents(runner, done.flatMap(({ tx }) => tx.events));
      await runner.commitTransaction();
    } catch (err) {
      this.logger.error(`commit of ${done.length} write units failed: ${(err as Error).message}`);
      await runner.rollbackTransaction().catch(() => undefined);
      this.lastEventId = firstEventId;
      done.forEach(({ unit }) => unit.reject(err));
      return;
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

}
