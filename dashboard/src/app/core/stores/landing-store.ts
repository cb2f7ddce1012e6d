import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { LandRequirement, LandResult, LandingQueueItem } from '../api-types';
import { RequirementsStore } from './requirements-store';

type QueueMethod = Exclude<LandRequirement['method'], 'pull_request'>;

/**
 * Landing (issue 28): a Requirement's land, and the merge queue. The queue has no version of its
 * own, so `landing.queue.updated` (which carries all of it) always wins: a snapshot or a
 * mutation's answer is taken only when no event arrived while it was asked for (its own event
 * follows on the stream anyway).
 */
@Injectable({ providedIn: 'root' })
export class LandingStore {
  private readonly api = inject(Api);
  private readonly requirements = inject(RequirementsStore);
  private readonly queueSig = signal<readonly LandingQueueItem[]>([]);
  /** Counts the queue's events: an answer asked for before the latest one is older than it. */
  private generation = 0;

  readonly queue = this.queueSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.landingQueue) {
      this.generation += 1;
      this.queueSig.set(changes.landingQueue.items);
    }
  }

  /** The queue (quietly: an older server has no such endpoint, and the board is the same without it). */
  async readQueue(): Promise<void> {
    await this.answer(() => this.api.client.GET('/api/landing-queue'), true);
  }

  /**
   * Lands a Requirement. Quiet: the land menu shows a refusal itself, with its files (the error
   * is rethrown for it). The answer's Requirement (landed, perhaps done) shows at once.
   */
  async land(requirementId: string, body: LandRequirement): Promise<LandResult> {
    const result = await this.api.call(
      this.api.client.POST('/api/requirements/{id}/land', { body, params: { path: { id: requirementId } } }),
      true,
    );
    this.requirements.accept(result.requirement);
    return result;
  }

  /** Quiet, as land: the menu shows the refusal. */
  async enqueue(requirementId: string, method: QueueMethod, expectedHead?: string): Promise<void> {
    await this.answer(
      () => this.api.client.POST('/api/landing-queue', { body: { expectedHead, method, requirementId } }),
      true,
    );
  }

  async dequeue(requirementId: string): Promise<void> {
    await this.answer(() =>
      this.api.client.DELETE('/api/landing-queue/{requirementId}', { params: { path: { requirementId } } }),
    );
  }

  /**
   * The queue in a new order, shown at once (a drop must not jump back while the server answers).
   * A refusal (the queue changed meanwhile) is shown by the API service, and the queue read again.
   */
  async reorder(requirementIds: readonly string[]): Promise<void> {
    const byId = new Map(this.queueSig().map((item) => [item.requirementId, item]));
    const moved = requirementIds.flatMap((id, i) => {
      const item = byId.get(id);
      return item ? [{ ...item, position: i + 1 }] : [];
    });
    if (moved.length === byId.size) {
      this.queueSig.set(moved);
    }
    try {
      await this.answer(() =>
        this.api.client.PUT('/api/landing-queue', { body: { requirementIds: [...requirementIds] } }),
      );
    } catch (err) {
      await this.readQueue().catch(() => undefined);
      throw err;
    }
  }

  private async answer(
    request: () => Promise<{ data?: { items: LandingQueueItem[] }; error?: unknown; response: Response }>,
    quiet = false,
  ): Promise<void> {
    const asked = this.generation;
    const queue = await this.api.call(request(), quiet);
    if (asked === this.generation) {
      this.queueSig.set(queue.items);
    }
  }
}
