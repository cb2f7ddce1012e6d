import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, Repository } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { EventBus } from '../event-bus';
import { RUNTIME, type Runtime } from '../runtime';
import { READER_DATA_SOURCE } from './database.constants';
import type { GroupCommit } from './group-commit';
import { boardChannel } from './postgres/postgres-board';
import { PostgresGroupCommit } from './postgres/postgres-group-commit';
import { SqliteGroupCommit } from './sqlite-group-commit';
import type { Unit, WriteQueue } from './unit-of-work';

const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * The data sources and the one serialized write path (docs/architecture.md#the-store). Writes are units of
 * work (`UnitOfWork`) run by a `WriteQueue`; on SQLite that is the group commit of
 * `SqliteGroupCommit` (or `PostgresGroupCommit` when the configuration names a PostgreSQL
 * server), where each unit is rolled back alone if it fails.
 *
 * Reads go to a second connection on the same file (WAL): they run in parallel with writes,
 * only ever see committed data and never wait in the write queue.
 */
@Injectable()
export class Database implements BeforeApplicationShutdown, OnApplicationShutdown, OnModuleInit, WriteQueue {
  private readonly logger = new Logger(Database.name);
  private readonly queue: GroupCommit;
  private readonly sqlite: boolean;
  private closed = false;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private checkpointing = false;

  constructor(
    bus: EventBus,
    @InjectDataSource() private readonly writer: DataSource,
    @InjectDataSource(READER_DATA_SOURCE) private readonly reader: DataSource,
    @Inject(RUNTIME) runtime: Pick<Runtime, 'store'>,
  ) {
    this.sqlite = runtime.store.kind === 'sqlite';
    const publish = (event: ManagerEvent) => bus.publish(event);
    const store = runtime.store;
    this.queue =
      store.kind === 'sqlite'
        ? new SqliteGroupCommit(writer, publish, this.logger)
        : new PostgresGroupCommit(
            writer,
            publish,
            this.logger,
            store.board ? { channel: boardChannel(store.schema), schema: store.schema } : null,
          );
  }

  /**
   * WAL with synchronous=NORMAL: a commit is durable against a crash of this process (kill -9
   * loses nothing committed); only an OS crash or power cut may lose the last commits. FULL
   * would fsync on every commit and cap writes at the disk's flush rate.
   */
  async onModuleInit(): Promise<void> {
    if (!this.sqlite) {
      await this.queue.start();
      return;
    }
    await this.writer.query('PRAGMA synchronous = NORMAL');
    // Checkpoints copy the WAL into the database and fsync: tens of milliseconds on a slow disk.
    // Run on the writer connection they would stall every queued write behind them, so the
    // writer never checkpoints; the read connection does it in the background (PASSIVE: it
    // never blocks the writer), on its own thread-pool thread.
    await this.writer.query('PRAGMA wal_autocheckpoint = 0');
    this.checkpointTimer = setInterval(() => void this.checkpoint(), CHECKPOINT_INTERVAL_MS);
    this.checkpointTimer.unref();
    await this.queue.start();
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
   * after its events were published; rejects (with nothing of it written) if the unit throws.
   */
  write<T>(unit: Unit<T>): Promise<T> {
    if (this.closed) {
      return Promise.reject(new Error('database is shutting down'));
    }
    return this.queue.write(unit);
  }

  /** Before the HTTP server closes: finish what was accepted so far. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.queue.idle();
  }

  /** After it closed (no request in flight): finish the rest, then refuse new work. */
  async onApplicationShutdown(): Promise<void> {
    await this.queue.idle();
    this.closed = true;
    if (this.queue instanceof PostgresGroupCommit) {
      await this.queue.stop();
      return;
    }
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
}
