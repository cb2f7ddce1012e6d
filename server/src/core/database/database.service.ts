import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, QueryRunner, Repository } from 'typeorm';

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

/**
 * The one serialized write path (architecture §4). SQLite has one writer, and TypeORM's sqlite
 * driver shares one connection, so every write transaction goes through this queue. Units that
 * queue up while a commit is in flight are folded into the next transaction (group commit),
 * each inside its own savepoint, so one unit's failure rolls back only that unit.
 *
 * Reads go to a second connection on the same file (WAL): they run in parallel with writes and
 * only ever see committed data.
 */
@Injectable()
export class Database implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(Database.name);
  private readonly queue: PendingUnit[] = [];
  private draining: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly bus: EventBus,
    @InjectDataSource() private readonly writer: DataSource,
    @InjectDataSource(READER_DATA_SOURCE) private readonly reader: DataSource,
  ) {}

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

  private async commitBatch(batch: PendingUnit[]): Promise<void> {
    const runner: QueryRunner = this.writer.createQueryRunner();
    const done: Array<{ unit: PendingUnit; tx: WriteTx; value: unknown }> = [];
    try {
      await runner.startTransaction();
    } catch (err) {
      batch.forEach((unit) => unit.reject(err));
      return;
    }
    for (const unit of batch) {
      const tx = new WriteTx(runner.manager);
      try {
        await runner.startTransaction(); // a SAVEPOINT inside the batch transaction
        const value = await unit.unit(tx);
        await runner.commitTransaction(); // RELEASE the savepoint
        done.push({ tx, unit, value });
      } catch (err) {
        await this.rollbackUnit(runner);
        unit.reject(err);
      }
    }
    try {
      await runner.commitTransaction();
    } catch (err) {
      this.logger.error(`commit of ${done.length} write units failed: ${(err as Error).message}`);
      await runner.rollbackTransaction().catch(() => undefined);
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

  private async rollbackUnit(runner: QueryRunner): Promise<void> {
    try {
      await runner.rollbackTransaction(); // ROLLBACK TO the unit's savepoint
    } catch (err) {
      // The savepoint is gone only if the connection failed; the batch commit will fail too.
      this.logger.error(`rollback of a write unit failed: ${(err as Error).message}`);
    }
  }
}
