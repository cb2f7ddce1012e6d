import { Injectable, computed, inject, signal } from '@angular/core';
import { Subject } from 'rxjs';

import type { AttentionItem } from '@libs/contracts';

import { Api } from '../api';
import type { Requirement } from '../api-types';
import type { Changes } from '../live/live-state';
import { RequirementsStore } from './requirements-store';

/** Oldest first, as the server lists them. */
const bySince = (a: AttentionItem, b: AttentionItem): number =>
  a.since < b.since ? -1 : a.since > b.since ? 1 : a.id < b.id ? -1 : 1;

/**
 * Needs you (issue 47): the items of the person at this dashboard — read once
 * (`GET /api/attention?person=me`), then kept by `attention.opened` / `attention.cleared`. The
 * board's store holds only a window of Requirements; the Requirements these items name are kept
 * here as the events carried them (or read once when a snapshot names one the board has not).
 */
@Injectable({ providedIn: 'root' })
export class AttentionStore {
  private readonly api = inject(Api);
  private readonly board = inject(RequirementsStore);
  private readonly itemsSig = signal<ReadonlyMap<string, AttentionItem>>(new Map());
  private readonly namedSig = signal<ReadonlyMap<string, Requirement>>(new Map());
  /** The person this dashboard acts as (from GET /api/workspace); null until known. */
  private me: string | null = null;
  /** Events that arrived while the latest read was in flight: applied again on top of its answer. */
  private during: Changes[] | null = null;
  /** Counts reads: only the latest one's answer is taken (a resync may start one while another is out). */
  private reads = 0;

  /** Items opened live (not those a read found): what a desktop notification announces. */
  readonly opened$ = new Subject<AttentionItem>();
  readonly items = computed(() => [...this.itemsSig().values()].sort(bySince));
  readonly count = computed(() => this.itemsSig().size);

  /** The Requirement an item names, as the freshest of the board's and this store's copies. */
  requirement(id: string): Requirement | undefined {
    const onBoard = this.board.requirements().get(id);
    const named = this.namedSig().get(id);
    return !named || (onBoard && onBoard.updatedAt >= named.updatedAt) ? onBoard : named;
  }

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (!changes.attentionOpened && !changes.attentionCleared) {
      return;
    }
    this.during?.push(changes);
    this.apply(changes, true);
  }

  /** The person's open items, replacing what is held (the events during the read are kept). */
  async read(): Promise<void> {
    const read = ++this.reads;
    const during: Changes[] = [];
    this.during = during;
    try {
      const [me, list] = await Promise.all([
        this.board.ownPersonId(),
        this.api.call(this.api.client.GET('/api/attention', { params: { query: { person: 'me' } } }), true),
      ]);
      if (read !== this.reads) {
        return; // a later read answers for it
      }
      this.me = me;
      this.itemsSig.set(new Map(list.items.map((item) => [item.id, item])));
      for (const changes of during) {
        this.apply(changes, false);
      }
      this.during = null;
      const missing = [...new Set(list.items.map((i) => i.requirementId))].filter((id) => !this.requirement(id));
      await Promise.all(missing.map((id) => this.readRequirement(id)));
    } finally {
      if (read === this.reads) {
        this.during = null;
      }
    }
  }

  private async readRequirement(id: string): Promise<void> {
    const requirement = await this.api
      .call(this.api.client.GET('/api/requirements/{id}', { params: { path: { id } } }), true)
      .catch(() => null);
    if (requirement) {
      this.name([requirement]);
    }
  }

  private apply(changes: Changes, live: boolean): void {
    const next = new Map(this.itemsSig());
    for (const { item, requirement } of changes.attentionOpened ?? []) {
      if (this.me !== null && item.person.id !== this.me) {
        continue; // team mode: another person's
      }
      if (!next.has(item.id) && live) {
        this.opened$.next(item);
      }
      next.set(item.id, item);
      this.name([requirement]);
    }
    for (const { item, requirement } of changes.attentionCleared ?? []) {
      next.delete(item.id);
      this.name([requirement]);
    }
    this.itemsSig.set(next);
  }

  private name(requirements: readonly Requirement[]): void {
    const next = new Map(this.namedSig());
    for (const r of requirements) {
      const known = next.get(r.id);
      if (!known || known.updatedAt <= r.updatedAt) {
        next.set(r.id, r);
      }
    }
    this.namedSig.set(next);
  }
}
