import { Injectable, inject, signal, type Signal, type WritableSignal } from '@angular/core';
import { Subject, type Observable } from 'rxjs';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { Run, Trace } from '../api-types';
import { LIVE_STATE } from './live-state-token';

/** Agent runs, and the trace timeline of each Requirement someone opened. */
@Injectable({ providedIn: 'root' })
export class RunsStore {
  private readonly api = inject(Api);
  private readonly live = inject(LIVE_STATE);
  private readonly runsSig = signal<ReadonlyMap<string, Run>>(new Map());
  private readonly traceSigs = new Map<string, WritableSignal<readonly Trace[]>>();
  private readonly finishedSubject = new Subject<Run>();

  readonly runs = this.runsSig.asReadonly();
  /** A run that an event just reported finished (a stream: two can finish in one tick). */
  readonly finished$: Observable<Run> = this.finishedSubject.asObservable();

  /** Every run's trace entries of a Requirement, in timeline order. */
  trace(requirementId: string): Signal<readonly Trace[]> {
    return this.traceFor(requirementId).asReadonly();
  }

  /** Keeps the trace from now on (events merge into it). */
  openTrace(requirementId: string): void {
    this.live.trace(requirementId);
  }

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.runs) {
      this.runsSig.set(this.live.runs.items);
    }
    for (const id of changes.traces ?? []) {
      this.publishTrace(id);
    }
    if (changes.finishedRun) {
      this.finishedSubject.next(changes.finishedRun);
    }
  }

  async readRuns(requirementId: string): Promise<void> {
    await this.api.all(
      (cursor) =>
        this.api.call(
          this.api.client.GET('/api/runs', { params: { query: { cursor, limit: this.api.pageSize, requirementId } } }),
        ),
      (items) => this.live.runs.upsertMany(items, 'snapshot') && this.runsSig.set(this.live.runs.items),
    );
  }

  async readTrace(requirementId: string): Promise<void> {
    const log = this.live.trace(requirementId);
    await this.api.all(
      (cursor) =>
        this.api.call(
          this.api.client.GET('/api/requirements/{id}/trace', {
            params: { path: { id: requirementId }, query: { cursor, limit: this.api.pageSize } },
          }),
        ),
      (items) => log.add(items) > 0 && this.publishTrace(requirementId),
    );
  }

  private publishTrace(id: string): void {
    this.traceFor(id).set(this.live.trace(id).items);
  }

  private traceFor(id: string): WritableSignal<readonly Trace[]> {
    let s = this.traceSigs.get(id);
    if (!s) {
      s = signal<readonly Trace[]>([]);
      this.traceSigs.set(id, s);
    }
    return s;
  }
}
