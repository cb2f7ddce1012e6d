import type { EntityManager, ObjectLiteral } from 'typeorm';

import type { ManagerEventOf, ManagerEventType } from '@libs/contracts';

/** An entity class, for the typed staging calls (the table and columns come from its metadata). */
export type EntityClass<E extends ObjectLiteral> = new (...args: never[]) => E;

/** A `where` of a staged UPDATE: equality, or IN (…) for an array. */
export type WhereOf<E> = { [K in keyof E]?: E[K] | ReadonlyArray<E[K]> };

/**
 * Rows the write path reads again and again (a Requirement and its session on every message),
 * as a unit sees them. `get` hands out the unit's own copy of a committed row (or of a row that
 * a unit before it in the same transaction left): the unit may change it in place, and what it
 * changed is written back for the next units only if it commits. A unit that rolls back leaves
 * nothing behind.
 */
export interface UnitCache {
  get<T>(key: string): T | undefined;
  set(key: string, value: unknown): void;
  delete(key: string): void;
}

/**
 * A multi-row INSERT that the group commit writes once per batch, just before COMMIT, with the
 * rows every committed unit of the batch gave it (in unit order), in the batch's transaction.
 * For rows no unit reads back and that are costly to write one statement at a time: SQLite's
 * FTS5 triggers cost several times more per single-row INSERT inside a unit's savepoint than
 * per row of one statement (docs/performance.md, "replies").
 */
export interface CommitInsert {
  /** Rows given under the same key share one statement. */
  readonly key: string;
  /** Values per row. */
  readonly width: number;
  /** The statement for `rows` rows: `?` placeholders taking the rows' values in order. */
  sql(rows: number): string;
}

/** An event as a unit appends it; the unit of work gives it its id. */
export type NewManagerEvent<T extends ManagerEventType> = Omit<ManagerEventOf<T>, 'id'>;

/**
 * What one unit of work receives (docs/architecture.md#the-store): the one way to write. A unit is
 * all-or-nothing: if it throws, none of what it staged, appended or registered takes effect,
 * and the other units that share its transaction are not affected.
 *
 * Writes are *staged*: an implementation may send them later and together (the SQLite one sends
 * a whole batch of units in one round trip). `reads()` is the way to read inside the
 * transaction: it sees the unit's own staged writes and those of the units before it.
 * Reads that need no transaction go to `Database.read()` instead, never through the write queue.
 */
export interface UnitOfWork {
  /** The manager for reads inside the transaction, after every staged write was sent. */
  reads(): Promise<EntityManager>;

  /*
   * The staging calls below are for repositories only (docs/architecture.md#the-store): a repository owns its
   * tables, and services change rows through the repository of the feature that owns them. Table
   * and column names come from the entity's metadata, so a rename is a compile error.
   */

  /**
   * Stages an INSERT of `row`. With `onConflict: 'ignore'` a row that would break a unique key
   * is skipped (`ON CONFLICT DO NOTHING`) instead of failing the unit.
   */
  insert<E extends ObjectLiteral>(entity: EntityClass<E>, row: E, options?: { onConflict?: 'ignore' }): void;

  /** Stages `UPDATE … SET … WHERE …`; a `where` value that is an array means IN (…). */
  update<E extends ObjectLiteral>(entity: EntityClass<E>, set: Partial<E>, where: WhereOf<E>): void;

  /** Stages `DELETE … WHERE …` (same `where` as update); an empty IN list deletes nothing. */
  delete<E extends ObjectLiteral>(entity: EntityClass<E>, where: WhereOf<E>): void;

  /**
   * Stages one statement; `?` placeholders take `params` in order. The SQL must be what both
   * SQLite and PostgreSQL accept (docs/architecture.md#the-store). For what the calls above cannot say.
   */
  execute(template: string, params?: readonly unknown[]): void;

  /**
   * Adds a row to `insert`, written with the batch just before COMMIT (see CommitInsert): it
   * commits or rolls back with this unit, but reads inside the transaction do not see it.
   */
  insertAtCommit(insert: CommitInsert, values: readonly unknown[]): void;

  /**
   * Appends a ManagerEvent to this unit's transaction and gives it its id. Ids grow in commit
   * order without gaps: a unit that rolls back gives its ids back.
   */
  appendEvent<T extends ManagerEventType>(event: NewManagerEvent<T>): ManagerEventOf<T>;

  /** Runs after the commit, once the unit's events were published. */
  afterCommit(hook: () => void): void;

  /** The rows cached between units (see UnitCache). */
  readonly cache: UnitCache;
}

/** A unit: its body runs once per commit attempt of the write path. */
export type Unit<T> = (uow: UnitOfWork) => Promise<T>;

/**
 * The serialized write path: runs units one at a time, in arrival order. Resolves with a unit's
 * result once it committed and its events were published; rejects with nothing of it written.
 */
export interface WriteQueue {
  write<T>(unit: Unit<T>): Promise<T>;
}
