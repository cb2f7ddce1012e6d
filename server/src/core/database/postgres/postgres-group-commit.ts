import type { EntityManager, QueryRunner } from 'typeorm';

import { EVENT_COLUMNS, GroupCommit, type PendingUnit, commitInserts, eventChunks, eventRow } from '../group-commit';
import { type EventIds, StagedUnitOfWork } from '../staged-unit-of-work';
import { BatchCache, type UnitCacheView } from '../write-cache';

/** A statement as a unit staged it: `$n` placeholders and their values. */
interface Statement {
  text: string;
  values: unknown[];
}

/**
 * One unit of the PostgreSQL group commit. Its statements are parameterized (the `?` of a
 * template become `$1…$n`, values are never spliced into the text) and sent when the unit reads
 * inside the transaction or when its body ends, after `SAVEPOINT u<n>` (sent before its first
 * statement). A failing statement is known at once, so the unit is rolled back to its
 * savepoint alone before the next unit runs: no other unit ever runs on its writes.
 */
export class PostgresUnitOfWork extends StagedUnitOfWork {
  /** `SAVEPOINT u<n>` was sent. */
  opened = false;
  /** It staged a statement (every write is one; commit-time inserts are `commitRows`). */
  wrote = false;
  private staged: Statement[] = [];

  constructor(
    private readonly runner: QueryRunner,
    position: number,
    manager: EntityManager,
    cache: UnitCacheView,
    eventIds: EventIds,
  ) {
    super(position, manager, cache, eventIds);
  }

  async reads(): Promise<EntityManager> {
    this.check();
    // Opened even by a unit that has not written: a read that fails aborts the transaction,
    // and only a savepoint lets the batch go on without this unit.
    await this.open();
    await this.flush();
    return this.manager;
  }

  execute(template: string, params: readonly unknown[] = []): void {
    this.check();
    this.wrote = true;
    this.staged.push(toStatement(template, params));
  }

  /** Sends what is staged; a failing statement fails the unit (its savepoint is rolled back by the group commit). */
  async flush(): Promise<void> {
    const statements = this.staged;
    this.staged = [];
    if (statements.length === 0) {
      return;
    }
    try {
      await this.open();
      for (const { text, values } of statements) {
        await this.runner.query(text, values);
      }
    } catch (err) {
      this.failure ??= err;
      throw err;
    }
  }

  private async open(): Promise<void> {
    if (!this.opened) {
      await this.runner.query(`SAVEPOINT ${this.savepoint}`);
      this.opened = true;
    }
  }
}

/**
 * The PostgreSQL implementation of the write queue (docs/decisions.md, "The write path on
 * PostgreSQL"): the same group commit as on SQLite, on one dedicated connection. Units that
 * queue up while a commit is in flight share the next transaction; each runs inside its own
 * savepoint, so one that throws (or whose statement fails) is rolled back alone and the
 * others are neither affected nor run again. The batch's events go in with multi-row INSERTs
 * just before COMMIT, with the ids' high-water mark (`am_writer.last_event_id`).
 *
 * A failed ROLLBACK TO or COMMIT (the connection or the server went away) rejects every unit
 * of the batch; nothing of it is committed, and the event ids it took are given back.
 */
export class PostgresGroupCommit extends GroupCommit {
  private runner: QueryRunner | undefined;
  /** Board mode: the `am_writer.generation` this runner's last batch committed (-1: none yet, so the first batch loads). */
  private generation = -1;

  constructor(
    writer: ConstructorParameters<typeof GroupCommit>[0],
    publish: ConstructorParameters<typeof GroupCommit>[1],
    logger: ConstructorParameters<typeof GroupCommit>[2],
    /** Team mode: the board's schema (the batch lock's key) and the channel its commits NOTIFY; null for a workspace of its own. */
    private readonly board: { schema: string; channel: string } | null = null,
  ) {
    super(writer, publish, logger);
  }

  /**
   * The high-water mark of event ids: the larger of the newest event and the recorded mark
   * (events of purged Requirements are deleted; their ids are never handed out again).
   */
  async start(): Promise<void> {
    this.runner = this.writer.createQueryRunner();
    await this.runner.connect();
    const [row] = (await this.runner.query(
      'SELECT GREATEST((SELECT COALESCE(MAX(id), 0) FROM manager_event), (SELECT COALESCE(MAX(last_event_id), 0) FROM am_writer)) AS id',
    )) as Array<{ id: number | string }>;
    this.lastEventId = Number(row?.id ?? 0);
  }

  /** After the last batch: gives the writer connection back. */
  async stop(): Promise<void> {
    await this.runner?.release();
    this.runner = undefined;
  }

  protected async commitBatch(pending: PendingUnit[]): Promise<PendingUnit[]> {
    const runner = this.runner;
    if (!runner) {
      const error = new Error('the PostgreSQL write path is not started');
      pending.forEach((unit) => unit.reject(error));
      return [];
    }
    let firstEventId = this.lastEventId;
    const done: Array<{ pending: PendingUnit; uow: PostgresUnitOfWork; value: unknown }> = [];
    let started = 0;
    let current: PendingUnit | undefined;
    let cache: BatchCache | undefined;
    let generation = this.generation;
    try {
      await runner.query('BEGIN');
      if (this.board) {
        generation = await this.lockBoard(runner);
        firstEventId = this.lastEventId;
      }
      cache = new BatchCache(this.cache);
      for (const unit of pending) {
        started++;
        current = unit;
        const uow = new PostgresUnitOfWork(runner, started, runner.manager, cache.view(started), this.eventIds);
        let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
        try {
          const value = await unit.unit(uow);
          await uow.flush();
          outcome = { ok: true, value };
        } catch (error) {
          outcome = { error, ok: false };
        }
        uow.close();
        if (outcome.ok && uow.failure === undefined) {
          if (uow.opened) {
            await runner.query(`RELEASE ${uow.savepoint}`);
          }
          cache.keep(uow.cache);
          done.push({ pending: unit, uow, value: outcome.value });
        } else {
          if (uow.opened) {
            await runner.query(`ROLLBACK TO ${uow.savepoint}`);
            await runner.query(`RELEASE ${uow.savepoint}`);
          }
          this.lastEventId = uow.firstEventId;
          unit.reject(uow.failure ?? (outcome as { error: unknown }).error);
        }
        current = undefined;
      }
      for (const { sql, values } of commitInserts(done.map((d) => d.uow))) {
        const statement = toStatement(sql, values);
        await runner.query(statement.text, statement.values);
      }
      const events = done.flatMap((d) => d.uow.events);
      for (const chunk of eventChunks(events)) {
        const values = chunk.flatMap(eventRow);
        const columns = EVENT_COLUMNS.split(', ');
        const rows = chunk.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
        await runner.query(`INSERT INTO manager_event (${EVENT_COLUMNS}) VALUES ${rows.join(', ')}`, values);
      }
      // A board's batch that changed nothing (a unit that only read and decided there was
      // nothing to do: another runner's message for a Requirement run elsewhere) leaves the
      // generation as it is, so no runner throws its write cache away for it.
      const wrote = events.length > 0 || done.some((d) => d.uow.wrote || d.uow.commitRows.length > 0);
      if (this.board && wrote) {
        // TypeORM answers an UPDATE with [rows, affected count], RETURNING or not.
        const [[row]] = (await runner.query(
          'UPDATE am_writer SET last_event_id = $1, generation = generation + 1 WHERE id = 1 RETURNING generation',
          [this.lastEventId],
        )) as [Array<{ generation: number | string }>, number];
        generation = Number(row?.generation);
        if (events.length > 0) {
          // Delivered to the other runners' LISTEN only if this commits, after it does.
          await runner.query('SELECT pg_notify($1, $2)', [this.board.channel, String(this.lastEventId)]);
        }
      } else if (!this.board && events.length > 0) {
        await runner.query('UPDATE am_writer SET last_event_id = $1 WHERE id = 1', [this.lastEventId]);
      }
      await runner.query('COMMIT');
      this.generation = generation;
    } catch (error) {
      await runner.query('ROLLBACK').catch(() => undefined);
      this.lastEventId = firstEventId;
      const rejected = [...done.map((d) => d.pending), ...(current ? [current] : [])];
      this.logger.error(
        `write transaction failed, ${rejected.length} unit(s) rejected: ${(error as Error)?.message ?? String(error)}`,
      );
      for (const unit of rejected) {
        unit.reject(error);
      }
      if (started === 0) {
        // Nothing ran: BEGIN (or the board's lock) failed, so the connection or the server is
        // gone. Running them again at once would only fail again, in a loop that never yields.
        for (const unit of pending) {
          unit.reject(error);
        }
        return [];
      }
      // The units not run yet run in the next batch (a new transaction, perhaps a new connection).
      return pending.slice(started);
    }
    cache.commit();
    this.settleCommitted(done);
    return [];
  }

  /**
   * Board mode: makes this batch the board's one writer until it ends (a transaction-level
   * advisory lock, so batches of all runners commit one after another, in lock order), and
   * catches up with what other runners committed since this one last did: the write cache is
   * forgotten and the event counter taken from the board's. Event ids stay gap-free and in
   * commit order across the board, which the SSE replay rules rely on.
   */
  private async lockBoard(runner: QueryRunner): Promise<number> {
    await runner.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 3))', [this.board!.schema]);
    const [row] = (await runner.query('SELECT generation, last_event_id FROM am_writer WHERE id = 1')) as Array<{
      generation: number | string;
      last_event_id: number | string;
    }>;
    const generation = Number(row?.generation ?? 0);
    if (generation !== this.generation) {
      this.cache.clear();
      this.lastEventId = Math.max(this.lastEventId, Number(row?.last_event_id ?? 0));
    }
    return generation;
  }
}

/** `?` placeholders to `$n`, and values as node-postgres sends them the way SQLite stores them (sqlLiteral). */
function toStatement(template: string, params: readonly unknown[]): Statement {
  let index = 0;
  const text = template.replace(/\?/g, () => {
    if (index >= params.length) {
      throw new Error(`statement has more placeholders than parameters: ${template}`);
    }
    return `$${++index}`;
  });
  if (index !== params.length) {
    throw new Error(`statement has fewer placeholders than parameters: ${template}`);
  }
  return { text, values: params.map(toParameter) };
}

function toParameter(value: unknown): unknown {
  if (value === undefined || value === null) {
    return null;
  }
  if (value instanceof Date) {
    return value.toISOString();
  }
  if (typeof value === 'bigint') {
    return value.toString();
  }
  if (typeof value === 'string') {
    // PostgreSQL text cannot hold NUL (SQLite can). HTTP refuses it in bodies and queries, so only
    // text from outside (an agent's output, GitHub) can carry one: stored as U+FFFD rather than
    // failing the unit that records it.
    return value.includes('\u0000') ? value.replace(/\u0000/g, '\uFFFD') : value;
  }
  if (Buffer.isBuffer(value)) {
    return value; // bytes (an attachment's content): node-postgres sends them as bytea
  }
  if (typeof value === 'object') {
    return JSON.stringify(value); // arrays too: node-postgres would send them as PostgreSQL arrays
  }
  return value;
}
