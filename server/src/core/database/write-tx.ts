import type { EntityManager } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { snakeCase } from './snake-naming.strategy';
import { bindLiterals } from './sql-literal';
import type { WriteCache } from './write-cache';

/** What the units of one batch share: the staged script and whether BEGIN has run. */
export interface BatchContext {
  staged: string[];
  began: boolean;
  /** Sends the staged statements (after BEGIN, the first time) in one round trip. */
  flush(): Promise<void>;
}

/**
 * One unit of work inside the serialized write path.
 *
 * Writes (`insert`, `update`, `execute`) are staged, not sent: the batch sends everything staged
 * as one script just before the next read or at COMMIT, so a unit that only writes costs no
 * round trip of its own. Reads go through `reads()`, which first sends what is staged, so a
 * unit always reads its own writes and those of the units before it.
 *
 * Events appended through EventLog are written with the batch at COMMIT; they are published,
 * and `afterCommit` hooks run, only once the transaction has committed.
 */
export class WriteTx {
  readonly events: ManagerEvent[] = [];
  readonly afterCommitHooks: Array<() => void> = [];

  constructor(
    private readonly batch: BatchContext,
    private readonly manager: EntityManager,
    /** Hands out the next event id (ids are assigned by the one writer, see Database). */
    readonly nextEventId: () => number,
    /** Rows kept between units; see WriteCache for when it is valid. */
    readonly cache: WriteCache,
  ) {}

  /** The manager for reads, after every staged write has been sent. */
  async reads(): Promise<EntityManager> {
    await this.batch.flush();
    return this.manager;
  }

  /** Stages `INSERT INTO table (…) VALUES (…)` from a row with camelCase keys. */
  insert(table: string, row: Record<string, unknown>): void {
    const keys = Object.keys(row);
    this.execute(
      `INSERT INTO ${table} (${keys.map(snakeCase).join(', ')}) VALUES (${keys.map(() => '?').join(', ')})`,
      keys.map((key) => row[key]),
    );
  }

  /** Stages `UPDATE table SET … WHERE …`; a `where` value that is an array means IN (…). */
  update(table: string, set: Record<string, unknown>, where: Record<string, unknown>): void {
    const setKeys = Object.keys(set);
    const params: unknown[] = setKeys.map((key) => set[key]);
    const conditions = Object.entries(where).map(([key, value]) => {
      if (Array.isArray(value)) {
        params.push(...value);
        return `${snakeCase(key)} IN (${value.map(() => '?').join(', ')})`;
      }
      params.push(value);
      return `${snakeCase(key)} = ?`;
    });
    this.execute(`UPDATE ${table} SET ${setKeys.map((key) => `${snakeCase(key)} = ?`).join(', ')} WHERE ${conditions.join(' AND ')}`, params);
  }

  /** Stages one statement; `?` placeholders take `params` in order. */
  execute(template: string, params: readonly unknown[] = []): void {
    this.batch.staged.push(bindLiterals(template, params));
  }

  afterCommit(hook: () => void): void {
    this.afterCommitHooks.push(hook);
  }
}
