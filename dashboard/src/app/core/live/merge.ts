// Merge rules for live state, kept free of Angular so they can be unit-tested under Jest.
//
// The dashboard loads JSON snapshots and listens to SSE at the same time, so the two race: an
// event may land before the snapshot that was requested earlier but answered later. The rules:
// - every resource carries a version (its update time); a snapshot never replaces a newer
//   version, and an event replaces anything not newer than itself (events arrive in order, and
//   two writes in the same millisecond must still apply). So the server never lets a later
//   event carry an older version of a resource than an earlier one;
// - the resource a mutation answers with is a snapshot too: it loses a tie, because its own
//   event follows on the stream, and it may land after events that overtook it (a start's 202,
//   doing/running, after the run.failed of the same millisecond);
// - a removed resource leaves a tombstone, so a late snapshot cannot bring it back.

/** ISO timestamps compare correctly as strings; numbers (sequences) compare as numbers. */
type Version = string | number;

function compare(a: Version, b: Version): number {
  if (typeof a === 'number' && typeof b === 'number') {
    return a - b;
  }
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export type MergeSource = 'event' | 'snapshot';

/**
 * Resources keyed by ID with versions and tombstones. Immutable from the outside: every change
 * returns whether anything changed, and `items` is a fresh Map after a change so signals that
 * hold it notice.
 */
export class VersionedMap<T extends { id: string }> {
  private map = new Map<string, T>();
  private readonly tombstones = new Map<string, Version>();

  constructor(private readonly versionOf: (item: T) => Version) {}

  get items(): ReadonlyMap<string, T> {
    return this.map;
  }

  get(id: string): T | undefined {
    return this.map.get(id);
  }

  isRemoved(id: string): boolean {
    return this.tombstones.has(id);
  }

  /** Applies one version; returns true when it replaced what was there. */
  upsert(item: T, source: MergeSource): boolean {
    const changed = this.accept(item, source);
    if (changed) {
      this.map = new Map(this.map).set(item.id, item);
    }
    return changed;
  }

  /** Applies a page of a snapshot in one go (one new Map for the whole page). */
  upsertMany(items: readonly T[], source: MergeSource): boolean {
    let next: Map<string, T> | null = null;
    for (const item of items) {
      if (this.accept(item, source, next ?? this.map)) {
        next ??= new Map(this.map);
        next.set(item.id, item);
      }
    }
    if (next) {
      this.map = next;
    }
    return next !== null;
  }

  /** Removes a resource for good (e.g. purged); `version` is when that happened. */
  remove(id: string, version: Version): boolean {
    const known = this.tombstones.get(id);
    if (known === undefined || compare(version, known) > 0) {
      this.tombstones.set(id, version);
    }
    if (!this.map.has(id)) {
      return false;
    }
    const next = new Map(this.map);
    next.delete(id);
    this.map = next;
    return true;
  }

  private accept(item: T, source: MergeSource, current: ReadonlyMap<string, T> = this.map): boolean {
    if (this.tombstones.has(item.id)) {
      return false;
    }
    const existing = current.get(item.id);
    if (!existing) {
      return true;
    }
    const order = compare(this.versionOf(item), this.versionOf(existing));
    return source === 'event' ? order >= 0 : order > 0;
  }
}

/**
 * An append-only log ordered by a sequence (a conversation, a trace timeline), deduplicated by ID
 * and by sequence: a replayed or re-fetched entry is dropped, an out-of-order one is inserted in
 * place.
 */
export class SequencedLog<T extends { id: string }> {
  private list: readonly T[] = [];
  private readonly ids = new Set<string>();

  constructor(private readonly order: (a: T, b: T) => number) {}

  get items(): readonly T[] {
    return this.list;
  }

  /** Adds entries not seen before; returns how many were new. */
  add(entries: readonly T[]): number {
    const fresh: T[] = [];
    for (const entry of entries) {
      if (!this.ids.has(entry.id)) {
        this.ids.add(entry.id);
        fresh.push(entry);
      }
    }
    if (fresh.length === 0) {
      return 0;
    }
    fresh.sort(this.order);
    const last = this.list[this.list.length - 1];
    const first = fresh[0];
    // The common case (a live append, or the next page) stays linear.
    if (!last || (first && this.order(last, first) < 0)) {
      this.list = [...this.list, ...fresh];
    } else {
      this.list = [...this.list, ...fresh].sort(this.order);
    }
    return fresh.length;
  }
}

/**
 * Where the event stream stands: the last event ID seen, so a reconnect resumes after it and a
 * replayed duplicate is ignored.
 */
export class EventCursor {
  private last: number | null = null;

  get lastEventId(): number | null {
    return this.last;
  }

  /** True when the event is new and should be applied; false for a duplicate from a replay. */
  accept(id: number): boolean {
    if (this.last !== null && id <= this.last) {
      return false;
    }
    this.last = id;
    return true;
  }

  /**
   * The URL to (re)connect to. The browser's own EventSource retry sends Last-Event-ID itself;
   * this is for a connection we open again after it closed for good (e.g. a server restart).
   */
  url(base: string): string {
    return this.last === null ? base : `${base}?after=${this.last}`;
  }
}
