import type { UnitCache } from './unit-of-work';

/** Marks a key a unit deleted (its overlay must hide the committed row). */
const GONE: unique symbol = Symbol('deleted');
type Overlay = Map<string, unknown>;

/**
 * Committed rows the write path reads again and again (a Requirement and its session on every
 * message), kept in memory between transactions. Exact because this process is the one writer
 * of its database (the instance lock; on a board, the batch lock and its generation check, which
 * clear it whenever another runner committed) and because it only ever holds committed data: units work
 * on copies (UnitCacheView) and their changes are written back after COMMIT (`commit`). A unit
 * or a batch that rolls back therefore leaves nothing to clear.
 */
export class WriteCache {
  private readonly entries = new Map<string, unknown>();

  constructor(private readonly capacity: number) {}

  /** The committed value itself: never hand it to a unit (UnitCacheView copies it). */
  peek(key: string): unknown {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // Least recently used goes first: move this one to the end.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** After COMMIT: what the batch's committed units left, newest value per key. */
  commit(changes: ReadonlyMap<string, unknown>): void {
    for (const [key, value] of changes) {
      this.entries.delete(key);
      if (value === GONE) {
        continue;
      }
      // A copy: the unit (or its caller) may still hold the object it changed.
      this.entries.set(key, copyRow(value));
      if (this.entries.size > this.capacity) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Forgets every row: on a board, another runner committed since this one last did (see PostgresGroupCommit). */
  clear(): void {
    this.entries.clear();
  }
}

/**
 * What the units of one transaction left so far, above the committed rows: each unit that ends
 * well adds its overlay; at COMMIT the whole goes into the WriteCache, and units that are taken
 * out of the batch (rolled back after their successors ran) are dropped by rebuilding.
 */
export class BatchCache {
  private readonly overlays: Array<{ owner: number; overlay: Overlay }> = [];
  private merged: Overlay = new Map();

  constructor(readonly committed: WriteCache) {}

  /** A view for the unit `owner` (its position in the batch). */
  view(owner: number): UnitCacheView {
    return new UnitCacheView(this, owner);
  }

  /** The unit ended well: later units of the batch see what it left. */
  keep(view: UnitCacheView): void {
    if (view.overlay.size === 0) {
      return;
    }
    this.overlays.push({ owner: view.owner, overlay: view.overlay });
    for (const [key, value] of view.overlay) {
      this.merged.set(key, value);
    }
  }

  /** Forgets what the units from position `owner` on left (they are rolled back). */
  dropFrom(owner: number): void {
    const kept = this.overlays.filter((o) => o.owner < owner);
    this.overlays.length = 0;
    this.overlays.push(...kept);
    this.merged = new Map();
    for (const { overlay } of kept) {
      for (const [key, value] of overlay) {
        this.merged.set(key, value);
      }
    }
  }

  /** After COMMIT. */
  commit(): void {
    this.committed.commit(this.merged);
  }

  lookup(key: string): unknown {
    return this.merged.has(key) ? this.merged.get(key) : this.committed.peek(key);
  }
}

/** One unit's cache: copies of what it read, and what it set or deleted. */
export class UnitCacheView implements UnitCache {
  readonly overlay: Overlay = new Map();

  constructor(
    private readonly batch: BatchCache,
    readonly owner: number,
  ) {}

  get<T>(key: string): T | undefined {
    if (this.overlay.has(key)) {
      const own = this.overlay.get(key);
      return own === GONE ? undefined : (own as T);
    }
    const shared = this.batch.lookup(key);
    if (shared === undefined || shared === GONE) {
      return undefined;
    }
    // Services change cached rows in place (and stage the matching UPDATE): the unit gets its
    // own copy, which goes back into the cache only if the unit commits.
    const copy = copyRow(shared);
    this.overlay.set(key, copy);
    return copy as T;
  }

  set(key: string, value: unknown): void {
    this.overlay.set(key, value);
  }

  delete(key: string): void {
    this.overlay.set(key, GONE);
  }
}

/** A deep copy of plain data (entity rows): keeps prototypes, copies arrays and dates. */
export function copyRow<T>(value: T): T {
  if (value === null || typeof value !== 'object') {
    return value;
  }
  if (value instanceof Date) {
    return new Date(value.getTime()) as T;
  }
  if (Array.isArray(value)) {
    return value.map((item: unknown) => copyRow(item)) as T;
  }
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
  for (const key of Object.keys(value)) {
    copy[key] = copyRow((value as Record<string, unknown>)[key]);
  }
  return copy as T;
}
