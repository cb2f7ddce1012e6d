import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { CreateTimer, Timer } from '../api-types';
import { LIVE_STATE } from './live-state-token';

/** Timers of every Requirement. */
@Injectable({ providedIn: 'root' })
export class TimersStore {
  private readonly api = inject(Api);
  private readonly live = inject(LIVE_STATE);
  private readonly timersSig = signal<ReadonlyMap<string, Timer>>(new Map());

  readonly timers = this.timersSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.timers) {
      this.publish();
    }
  }

  /** Every timer, or one Requirement's; each page shows as it arrives. */
  async readTimers(requirementId?: string): Promise<void> {
    const page = (cursor: string | undefined) =>
      this.api.call(
        requirementId
          ? this.api.client.GET('/api/requirements/{id}/timers', {
              params: { path: { id: requirementId }, query: { cursor, limit: this.api.pageSize } },
            })
          : this.api.client.GET('/api/timers', { params: { query: { cursor, limit: this.api.pageSize } } }),
      );
    await this.api.all(page, (items) => this.live.timers.upsertMany(items, 'snapshot') && this.publish());
  }

  async create(requirementId: string, body: CreateTimer): Promise<void> {
    this.accept(
      await this.api.call(
        this.api.client.POST('/api/requirements/{id}/timers', { body, params: { path: { id: requirementId } } }),
      ),
    );
  }

  async cancel(timer: Timer): Promise<void> {
    this.accept(
      await this.api.call(
        this.api.client.DELETE('/api/requirements/{id}/timers/{timerId}', {
          params: { path: { id: timer.requirementId, timerId: timer.id } },
        }),
      ),
    );
  }

  /** An answer merges as a snapshot: it loses a tie, since its own event follows on the stream. */
  private accept(timer: Timer): void {
    if (this.live.timers.upsert(timer, 'snapshot')) {
      this.publish();
    }
  }

  private publish(): void {
    this.timersSig.set(this.live.timers.items);
  }
}
