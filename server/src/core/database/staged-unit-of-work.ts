import type { EntityManager, EntityMetadata, ObjectLiteral } from 'typeorm';

import type { ManagerEvent, ManagerEventOf, ManagerEventType } from '@libs/contracts';

import type { CommitInsert, EntityClass, NewManagerEvent, UnitOfWork, WhereOf } from './unit-of-work';
import type { UnitCacheView } from './write-cache';

/** The event counter a group commit shares with its units (ids in commit order, see decisions.md). */
export interface EventIds {
  next(): number;
  peek(): number;
}

/**
 * What the SQLite and PostgreSQL units of work share: statements built from entity metadata,
 * events given their ids as they are appended and written by the group commit with the batch,
 * after-commit hooks, and the guard that a unit is not written through once it failed or ended.
 * The implementations differ only in how a statement is staged and sent (`execute`).
 */
export abstract class StagedUnitOfWork implements UnitOfWork {
  readonly events: ManagerEvent[] = [];
  readonly afterCommitHooks: Array<() => void> = [];
  /** Rows for the batch's commit-time INSERTs (see CommitInsert), written only if this unit commits. */
  readonly commitRows: Array<{ insert: CommitInsert; values: readonly unknown[] }> = [];
  /** The event counter before this unit took ids (what a rollback gives back). */
  readonly firstEventId: number;
  /**
   * Set when the unit must fail whatever its body does: a statement of its own failed, or the
   * batch lost its transaction, or an earlier unit's statement failed after this one ran.
   */
  failure: unknown = undefined;
  private closed = false;

  constructor(
    /** Its position in the batch (1-based), also its savepoint's name. */
    readonly position: number,
    protected readonly manager: EntityManager,
    readonly cache: UnitCacheView,
    private readonly eventIds: EventIds,
  ) {
    this.firstEventId = eventIds.peek();
  }

  /** Each unit runs between `SAVEPOINT u<n>` and `RELEASE u<n>` (or `ROLLBACK TO u<n>`). */
  get savepoint(): string {
    return `u${this.position}`;
  }

  abstract reads(): Promise<EntityManager>;

  abstract execute(template: string, params?: readonly unknown[]): void;

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
    this.execute(
      `UPDATE ${metadata.tableName} SET ${setKeys.map((key) => `${columnOf(metadata, key)} = ?`).join(', ')} WHERE ${conditions}`,
      params,
    );
  }

  delete<E extends ObjectLiteral>(entity: EntityClass<E>, where: WhereOf<E>): void {
    const metadata = this.metadata(entity);
    const params: unknown[] = [];
    this.execute(`DELETE FROM ${metadata.tableName} WHERE ${whereClause(metadata, where, params)}`, params);
  }

  appendEvent<T extends ManagerEventType>(event: NewManagerEvent<T>): ManagerEventOf<T> {
    this.check();
    const appended: ManagerEventOf<T> = { ...event, id: this.eventIds.next() };
    // Written with the batch's other events just before COMMIT (one statement for many).
    this.events.push(appended as ManagerEvent);
    return appended;
  }

  insertAtCommit(insert: CommitInsert, values: readonly unknown[]): void {
    this.check();
    if (values.length !== insert.width) {
      throw new Error(`${insert.key} takes ${insert.width} values per row, not ${values.length}`);
    }
    this.commitRows.push({ insert, values });
  }

  afterCommit(hook: () => void): void {
    this.check();
    this.afterCommitHooks.push(hook);
  }

  /** The body settled: nothing may be staged through this unit any more. */
  close(): void {
    this.closed = true;
  }

  protected check(): void {
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
