import type { EntityManager } from 'typeorm';

import { bindLiterals } from './sql-literal';
import { type EventIds, StagedUnitOfWork } from './staged-unit-of-work';
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
export class SqliteUnitOfWork extends StagedUnitOfWork {
  /** `SAVEPOINT u<n>` is staged (its RELEASE or ROLLBACK TO is then due). */
  opened = false;
  /** Some of its statements (so its SAVEPOINT) reached SQLite. */
  sent = false;
  /** Its savepoint was already rolled back and released (its own statement failed). */
  rolledBack = false;
  /** Where its statements not sent yet begin in the batch's staged list. */
  tailFrom = 0;

  constructor(
    private readonly batch: SqliteBatch,
    position: number,
    manager: EntityManager,
    cache: UnitCacheView,
    eventIds: EventIds,
  ) {
    super(position, manager, cache, eventIds);
  }

  async reads(): Promise<EntityManager> {
    this.check();
    await this.batch.flush();
    this.check();
    return this.manager;
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

  /** Its statements sent so far went out in the script that is being sent now. */
  markSent(): void {
    this.sent = true;
    this.tailFrom = 0;
  }

  private join(): void {
    this.tailFrom = this.batch.staged.length;
    this.batch.unsent.push(this);
  }
}
