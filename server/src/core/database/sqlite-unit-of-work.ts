import type { EntityManager, EntityMetadata, ObjectLiteral } from 'typeorm';

import type { ManagerEvent, ManagerEventOf, ManagerEventType } from '@libs/contracts';

import { bindLiterals } from './sql-literal';
import type { EntityClass, NewManagerEvent, UnitOfWork, WhereOf } from './unit-of-work';
import type { UnitCacheView } from './write-cache';

/**
 * What the units of one SQLite transaction share (see SqliteGroupCommit): the statements
 * staged and not sent yet, and the units they belong to, in order.
 */
export interface SqliteBatch {
  staged: string[];
  /** Units with statements in `staged` (a unit's SAVEPOINT is its first). */
  unsent: SqliteUnitOfWork[];
  /** Sends what is staged, in one round trip. */
  flush(): Promise<void>;
}

/**
 * One unit of the SQLite group commit. Its statements are staged between `SAVEPOINT u<n>` and
 * `RELEASE u<n>`, opened at its first write, so that it can be rolled back alone inside the
 * batch's transaction: if it throws before any of them was sent, they are simply dropped.
 */
export class SqliteUnitOfWork implements UnitOfWork {
  readonly events: ManagerEvent[] = [];
  readonly afterCommitHooks: Array<() => void> = [];
  /** The event counter before this unit took ids (what a rollback gives back). */
  readonly firstEventId: number;
  /** `SAVEPOINT u<n>` is staged (its RELEASE or ROLLBACK TO is then due). */
  opened = false;
  /** Some of its statements (so its SAVEPOINT) reached SQLite. */
  sent = false;
  /** Its savepoint was already rolled back and released (its own statement failed). */
  rolledBack = false;
  /** Where its statements not sent yet begin in the batch's staged list. */
  tailFrom = 0;
  /**
   * Set when the unit must fail whatever its body does: a statement of its own failed, or the
   * batch lost its transaction, or an earlier unit's statement failed after this one ran.
   */
  failure: unknown = undefined;
  private closed = false;

  constructor(
    private readonly batch: SqliteBatch,
    /** Its position in the batch (1-based), also its savepoint's name. */
    readonly position: number,
    private readonly manager: EntityManager,
    readonly cache: UnitCacheView,
    private readonly eventIds: { next(): number; peek(): number },
  ) {
    this.firstEventId = eventIds.peek();
  }

  get savepoint(): string {
    return `u${this.position}`;
  }

  async reads(): Promise<EntityManager> {
    this.check();
    await this.batch.flush();
    this.check();
    return this.manager;
  }

  insert<E extends ObjectLiteral>(entity: EntityClass<E>, row: E, options: { onConflict?: 'ignore' } = {}): void {
    const metadata = this.metadata(entity);
    const keys = Object.keys(row);
    this.execute(
      `INSERT INTO ${metadata.tableName} (${keys.map((key) => columnOf(metadata, key)).join(', ')}) VALUES (${keys.map(() => '?').join(', ')})${
        options.onConflict === 'ignore' ? ' ON CONFLICT DO NOTHING' : ''
      }`,
      keys.map((key) => (row as Record<string, unknown>)[key]),
    );
  }

  update<E extends ObjectLiteral>(entity: EntityClass<E>, set: Partial<E>, where: WhereOf<E>): void {
    const metadata = this.metadata(entity);
    const setKeys = Object.keys(set);
    const params: unknown[] = setKeys.map((key) => (set as Record<string, unknown>)[key]);
    const conditions = whereClause(metadata, where, params);
    this.execute(`UPDATE ${metadata.tableName} SET ${setKeys.map((key) => `${columnOf(metadata, key)} = ?`).join(', ')} WHERE ${conditions}`, params);
  }

  delete<E extends ObjectLiteral>(entity: EntityClass<E>, where: WhereOf<E>): void {
    const metadata = this.metadata(entity);
    const params: unknown[] = [];
    this.execute(`DELETE FROM ${metadata.tableName} WHERE ${whereClause(metadata, where, params)}`, params);
  }

  execute(template: string, params: readonly unknown[] = []): void {
    this.check();
    const sql = bindLiterals(template, params);
    if (!this.opened) {
      this.opened = true;
      this.join();
      this.batch.staged.push(`SAVEPOINT ${this.savepoint}`);
    } else if (this.batch.unsent.at(-1) !== this) {
      this.join(); // its first statement since a flush
    }
    this.batch.staged.push(sql);
  }

  appendEvent<T extends ManagerEventType>(event: NewManagerEvent<T>): ManagerEventOf<T> {
    this.check();
    const appended: ManagerEventOf<T> = { ...event, id: this.eventIds.next() };
    // Written with the batch's other events just before COMMIT (one statement for many).
    this.events.push(appended as ManagerEvent);
    return appended;
  }

  afterCommit(hook: () => void): void {
    this.check();
    this.afterCommitHooks.push(hook);
  }

  /** Its body ended well: `RELEASE u<n>` closes its statements. */
  release(): void {
    if (!this.opened) {
      return;
    }
    if (this.batch.unsent.at(-1) !== this) {
      this.join();
    }
    this.batch.staged.push(`RELEASE ${this.savepoint}`);
  }

  /** The body settled: nothing may be staged through this unit any more. */
  close(): void {
    this.closed = true;
  }

  /** Its statements sent so far went out in the script that is being sent now. */
  markSent(): void {
    this.sent = true;
    this.tailFrom = 0;
  }

  private join(): void {
    this.tailFrom = this.batch.staged.length;
    this.batch.unsent.push(this);
  }

  private check(): void {
    if (this.failure !== undefined) {
      throw this.failure;
    }
    if (this.closed) {
      throw new Error('this unit of work has ended; write through the unit you are given');
    }
  }

  private metadata(entity: EntityClass<ObjectLiteral>): EntityMetadata {
    return this.manager.connection.getMetadata(entity);
  }
}

function columnOf(metadata: EntityMetadata, property: string): string {
  const column = metadata.findColumnWithPropertyName(property);
  if (!column) {
    throw new Error(`${metadata.name} has no column for ${property}`);
  }
  return column.databaseName;
}

/** `a = ? AND b IN (?, ?)`, pushing the values onto `params`; an empty list matches nothing. */
function whereClause(metadata: EntityMetadata, where: object, params: unknown[]): string {
  const conditions = Object.entries(where as Record<string, unknown>).map(([key, value]) => {
    const column = columnOf(metadata, key);
    if (Array.isArray(value)) {
      if (value.length === 0) {
        return 'FALSE';
      }
      params.push(...(value as unknown[]));
      return `${column} IN (${value.map(() => '?').join(', ')})`;
    }
    if (value === null) {
      return `${column} IS NULL`;
    }
    params.push(value);
    return `${column} = ?`;
  });
  if (conditions.length === 0) {
    throw new Error(`a staged statement on ${metadata.tableName} needs a where`);
  }
  return conditions.join(' AND ');
}
