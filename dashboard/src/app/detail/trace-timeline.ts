import { ChangeDetectionStrategy, Component, computed, inject, input, signal } from '@angular/core';

import { I18n, keyOf } from '../core/i18n';
import type { Run, Trace } from '../core/api-types';
import { RunsStore } from '../core/stores/runs-store';

/** Trace entries rendered at once; a long session grows by this much on request. */
const WINDOW = 150;

interface Row {
  trace: Trace;
  /** The first entry of a run gets a heading with the run's number, start and status. */
  newRun: boolean;
  /** For a tool call: its result's output, shown under the call. */
  output: Trace | null;
}

/**
 * Every run's trace in one timeline, live: the newest run first, each run's steps in the order
 * they happened, with their time and, for a tool, how long it took. Tool results are folded
 * under their call and the assistant's text is shown as it is; only a window of rows is in the
 * DOM (with `content-visibility` for what scrolls out of view), so thousands of entries stay
 * responsive.
 */
@Component({
  selector: 'am-trace-timeline',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="trace" data-testid="trace" role="log" [attr.aria-label]="t('detail.trace')" tabindex="0">
      @for (row of visible(); track row.trace.id) {
        @if (row.newRun) {
          <div class="run-sep" data-testid="trace-run" [attr.data-run-id]="row.trace.runId" [title]="row.trace.runId">
            {{ runLabel(row.trace.runId) }}
          </div>
        }
        <div class="trace-item" [class]="'trace-item ' + row.trace.kind" [attr.data-kind]="row.trace.kind">
          <div class="row">
            <time class="muted" [attr.datetime]="row.trace.createdAt">{{ clock(row.trace.createdAt) }}</time>
            <span class="badge">{{ t(keyOf('kind', row.trace.kind)) }}</span>
            @if (row.trace.toolName) {
              <code>{{ row.trace.toolName }}</code>
            }
            @if (row.trace.kind !== 'assistant_message') {
              <span style="overflow-wrap: anywhere">{{ row.trace.title }}</span>
            }
            @if (row.output; as out) {
              <span class="muted" data-testid="tool-duration">{{
                t('trace.took', { d: i18n.duration(row.trace.createdAt, out.createdAt) })
              }}</span>
            }
            @if (row.trace.status === 'failed' || row.output?.status === 'failed') {
              <span class="badge danger">{{ t('trace.failed') }}</span>
            }
          </div>
          @if (row.trace.kind === 'assistant_message') {
            <div class="assistant-text" data-testid="assistant-text">{{ row.trace.detail || row.trace.title }}</div>
          } @else if (row.trace.detail && row.trace.detail !== row.trace.title) {
            <details>
              <summary class="muted">
                {{ row.trace.kind === 'tool_call' ? row.trace.toolName || 'input' : '…' }}
              </summary>
              <pre>{{ row.trace.detail }}</pre>
            </details>
          }
          @if (row.output?.detail; as output) {
            <details>
              <summary class="muted">{{ t('action.showOutput') }}</summary>
              <pre data-testid="tool-output">{{ output }}</pre>
            </details>
          }
        </div>
      } @empty {
        <p class="empty">{{ t('detail.noTrace') }}</p>
      }
      @if (hidden() > 0) {
        <button type="button" class="ghost small" (click)="count.set(count() + window * 4)">
          {{ t('action.earlier') }} ({{ hidden() }})
        </button>
      }
    </div>
  `,
})
export class TraceTimeline {
  readonly requirementId = input.required<string>();
  /** The Requirement's runs, newest first (for the run headings). */
  readonly runs = input<readonly Run[]>([]);
  readonly runNumbers = input<ReadonlyMap<string, number>>(new Map());
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  private readonly store = inject(RunsStore);
  protected readonly window = WINDOW;
  protected readonly count = signal(WINDOW);

  private readonly rows = computed<Row[]>(() => {
    const all = this.store.trace(this.requirementId())();
    const results = new Map<string, Trace>();
    const byRun = new Map<string, Trace[]>();
    for (const t of all) {
      if (t.kind === 'tool_result' && t.toolCallId) {
        results.set(`${t.runId}:${t.toolCallId}`, t);
      }
      byRun.set(t.runId, [...(byRun.get(t.runId) ?? []), t]);
    }
    // Newest run first: in the order of the runs (newest first) when known, else by their first entry.
    const rank = new Map(this.runs().map((r, i) => [r.id, i]));
    const order = [...byRun.keys()].sort((a, b) => {
      const ra = rank.get(a);
      const rb = rank.get(b);
      if (ra !== undefined && rb !== undefined) {
        return ra - rb;
      }
      const sa = byRun.get(a)?.[0]?.createdAt ?? '';
      const sb = byRun.get(b)?.[0]?.createdAt ?? '';
      return sa < sb ? 1 : sa > sb ? -1 : 0;
    });
    const rows: Row[] = [];
    for (const runId of order) {
      const calls = new Set<string>();
      let first = true;
      for (const trace of byRun.get(runId) ?? []) {
        const key = trace.toolCallId ? `${trace.runId}:${trace.toolCallId}` : null;
        if (trace.kind === 'tool_result' && key && calls.has(key)) {
          continue; // shown under its call
        }
        if (trace.kind === 'tool_call' && key) {
          calls.add(key);
        }
        rows.push({
          newRun: first,
          output: trace.kind === 'tool_call' && key ? (results.get(key) ?? null) : null,
          trace,
        });
        first = false;
      }
    }
    return rows;
  });

  protected readonly visible = computed(() => this.rows().slice(0, this.count()));
  protected readonly hidden = computed(() => Math.max(0, this.rows().length - this.count()));

  protected runLabel(runId: string): string {
    const run = this.runs().find((r) => r.id === runId);
    const n = this.runNumbers().get(runId);
    const label = this.t('trace.run', { n: n ?? '?', t: run ? this.i18n.dateTime(run.startedAt) : '' });
    return run ? `${label} · ${this.t(keyOf('run', run.status))}` : label;
  }

  protected clock(iso: string): string {
    return new Date(iso).toLocaleTimeString(this.i18n.locale(), {
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
  }
}
