import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { Run, Usage } from '../api-types';

export interface WorkspaceUsage {
  today: Usage;
  week: Usage;
}

/** Local midnight, and the local Monday that starts this week: what "today" and "this week" mean to the reader. */
export function usageWindows(now = new Date()): { today: string; week: string } {
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const week = new Date(today);
  week.setDate(today.getDate() - ((today.getDay() + 6) % 7));
  return { today: today.toISOString(), week: week.toISOString() };
}

/** A Requirement's totals from its runs (the page holds all of them). */
export function sumUsage(runs: readonly Run[]): Usage {
  let costUsd: number | null = null;
  let costReportedRuns = 0;
  const total = { cachedInputTokens: 0, inputTokens: 0, outputTokens: 0 };
  for (const run of runs) {
    total.inputTokens += run.inputTokens ?? 0;
    total.cachedInputTokens += run.cachedInputTokens ?? 0;
    total.outputTokens += run.outputTokens ?? 0;
    if (run.costUsd !== null) {
      costUsd = (costUsd ?? 0) + run.costUsd;
      costReportedRuns++;
    }
  }
  return { ...total, costReportedRuns, costUsd, runs: runs.length };
}

/** The workspace's token and cost totals for today and this week, read again when a run ends. */
@Injectable({ providedIn: 'root' })
export class UsageStore {
  private readonly api = inject(Api);
  private readonly workspaceSig = signal<WorkspaceUsage | null>(null);
  private pending: ReturnType<typeof setTimeout> | null = null;

  readonly workspace = this.workspaceSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.finishedRun) {
      this.refreshSoon();
    }
  }

  async read(): Promise<void> {
    const windows = usageWindows();
    const get = (since: string) =>
      this.api.call(this.api.client.GET('/api/usage', { params: { query: { since } } }), true);
    const [today, week] = await Promise.all([get(windows.today), get(windows.week)]);
    this.workspaceSig.set({ today, week });
  }

  /** Several runs ending together cost one read. */
  private refreshSoon(): void {
    if (this.pending === null) {
      this.pending = setTimeout(() => {
        this.pending = null;
        void this.read().catch(() => undefined);
      }, 300);
    }
  }
}
