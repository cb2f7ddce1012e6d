import type { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import type { EventIds, StagedUnitOfWork } from './staged-unit-of-work';
import type { CommitInsert, Unit, WriteQueue } from './unit-of-work';
import { WriteCache } from './write-cache';

export interface PendingUnit {
  unit: Unit<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** Units folded into one transaction at most; bounds how long one commit can hold the lock. */
export const MAX_BATCH = 128;
/** Rows kept by the write cache (a Requirement and its session are two). */
const WRITE_CACHE_ENTRIES = 4096;
/** Rows per multi-row event INSERT (keeps one statement's text in the low megabytes, and under PostgreSQL's 65,535 parameters). */
export const EVENTS_PER_INSERT = 500;
export const EVENT_COLUMNS =
  'id, type, requirement_id, session_id, run_id, actor_kind, actor_id, actor_name, actor_email, payload, created_at';

/**
 * What the SQLite and PostgreSQL group commits share (docs/decisions.md, "The write path"):
 * the queue in arrival order, batches of at most MAX_BATCH units, the event counter, the write
 * cache of committed rows, and what happens after COMMIT (events published in id order, then
 * after-commit hooks, then the callers resolved). Each store says how a batch is committed.
 */
export abstract class GroupCommit implements WriteQueue {
  private readonly queue: PendingUnit[] = [];
  private draining: Promise<void> | null = null;
  /**
   * Event ids are handed out here rather than by the database, so a batch's events can be
   * inserted in one statement at commit time. Units run one after another and this process is
   * the only writer (instance lock), so a unit that rolls back gives back exactly the ids it took.
   */
  protected lastEventId = 0;
  protected readonly eventIds: EventIds = { next: () => ++this.lastEventId, peek: () => this.lastEventId };
  protected readonly cache = new WriteCache(WRITE_CACHE_ENTRIES);

  constructor(
    protected readonly writer: DataSource,
    private readonly publish: (event: ManagerEvent) => void,
    protected readonly logger: Logger,
  ) {}

  abstract start(): Promise<void>;

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

  /** Commits one batch; returns the units to run again, ahead of anything queued meanwhile. */
  protected abstract commitBatch(pending: PendingUnit[]): Promise<PendingUnit[]>;

  /** After COMMIT: published in id order (units ran in order and ids grow along the batch), then hooks, then results. */
  protected settleCommitted(
    done: ReadonlyArray<{ pending: PendingUnit; uow: StagedUnitOfWork; value: unknown }>,
  ): void {
    for (const { pending, uow, value } of done) {
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
      pending.resolve(value);
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const again = await this.commitBatch(this.queue.splice(0, MAX_BATCH));
        // Ahead of anything queued meanwhile: arrival order is kept.
        this.queue.unshift(...again);
      }
    } finally {
      this.draining = null;
    }
  }
}

/** One event as the row values of `EVENT_COLUMNS`, in that order. */
export function eventRow(e: ManagerEvent): unknown[] {
  return [
    e.id,
    e.type,
    e.requirementId,
    e.sessionId,
    e.runId,
    e.actor.kind,
    e.actor.id,
    e.actor.name ?? null,
    e.actor.email ?? null,
    JSON.stringify(e.payload),
    e.createdAt,
  ];
}

/** The batch's events in chunks of EVENTS_PER_INSERT, for multi-row INSERTs. */
export function eventChunks(events: ManagerEvent[]): ManagerEvent[][] {
  const chunks: ManagerEvent[][] = [];
  for (let start = 0; start < events.length; start += EVENTS_PER_INSERT) {
    chunks.push(events.slice(start, start + EVENTS_PER_INSERT));
  }
  return chunks;
}

/** Rows per commit-time INSERT (see CommitInsert): as EVENTS_PER_INSERT, bounds a statement's size and parameters. */
export const COMMIT_ROWS_PER_INSERT = 500;

/**
 * The committed units' commit-time INSERTs (see CommitInsert): one statement per key and chunk
 * of COMMIT_ROWS_PER_INSERT rows, keys in the order first used, rows in unit order.
 */
export function commitInserts(
  units: ReadonlyArray<Pick<StagedUnitOfWork, 'commitRows'>>,
): Array<{ sql: string; values: unknown[] }> {
  const byKey = new Map<string, { insert: CommitInsert; rows: Array<readonly unknown[]> }>();
  for (const unit of units) {
    for (const { insert, values } of unit.commitRows) {
      const entry = byKey.get(insert.key) ?? { insert, rows: [] };
      entry.rows.push(values);
      byKey.set(insert.key, entry);
    }
  }
  const statements: Array<{ sql: string; values: unknown[] }> = [];
  for (const { insert, rows } of byKey.values()) {
    for (let start = 0; start < rows.length; start += COMMIT_ROWS_PER_INSERT) {
      const chunk = rows.slice(start, start + COMMIT_ROWS_PER_INSERT);
      statements.push({ sql: insert.sql(chunk.length), values: chunk.flat() });
    }
  }
  return statements;
}
