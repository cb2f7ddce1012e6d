import { ChangeDetectionStrategy, Component, ElementRef, afterRenderEffect, computed, inject, input, signal, viewChild } from '@angular/core';

import { I18n } from '../core/i18n';
import type { Trace } from '../core/models';
import { RunsStore } from '../core/stores/runs-store';

/** Trace entries rendered at once; a long session grows by this much on request. */
const WINDOW = 150;

interface Row {
  trace: Trace;
  /** The first entry of a run gets a separator with the run's ID. */
  newRun: boolean;
  /** For a tool call: its result's output, shown under the call. */
  output: Trace | null;
}

/**
 * Every run's trace in one timeline, live. Tool results are folded under their call; only the
 * latest window is in the DOM (with `content-visibility` for what scrolls out of view), so a
 * session with thousands of entries stays responsive.
 */
@Component({
  selector: 'am-trace-timeline',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="trace" #scroller (scroll)="onScroll()" data-testid="trace" role="log" [attr.aria-label]="t('detail.trace')" tabindex="0">
      @if (hidden() > 0) {
        <button type="button" class="ghost small" (click)="count.set(count() + window * 4)">{{ t('action.earlier') }} ({{ hidden() }})</button>
      }
      @for (row of visible(); track row.trace.id) {
        @if (row.newRun) {
          <div class="run-sep">
            <code>{{ row.trace.runId }}</code>
          </div>
        }
        <div class="trace-item" [class]="'trace-item ' + row.trace.kind" [attr.data-kind]="row.trace.kind">
          <div class="row">
            <span class="badge">{{ row.trace.kind }}</span>
            @if (row.trace.toolName) {
              <code>{{ row.trace.toolName }}</code>
            }
            <span style="overflow-wrap: anywhere">{{ row.trace.title }}</span>
            @if (row.trace.status === 'failed' || row.output?.status === 'failed') {
              <span class="badge danger">failed</span>
            }
          </div>
          @if (row.trace.detail && row.trace.detail !== row.trace.title) {
            <details>
              <summary class="muted">{{ row.trace.kind === 'tool_call' ? row.trace.toolName || 'input' : '…' }}</summary>
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
    </div>
  `,
})
export class TraceTimeline {
  readonly requirementId = input.required<string>();
  protected readonly t = inject(I18n).t;
  private readonly store = inject(RunsStore);
  private readonly scroller = viewChild.required<ElementRef<HTMLElement>>('scroller');
  protected readonly window = WINDOW;
  protected readonly count = signal(WINDOW);
  private atBottom = true;

  private readonly rows = computed<Row[]>(() => {
    const all = this.store.trace(this.requirementId())();
    const results = new Map<string, Trace>();
    for (const t of all) {
      if (t.kind === 'tool_result' && t.toolCallId) {
        results.set(`${t.runId}:${t.toolCallId}`, t);
      }
    }
    const calls = new Set<string>();
    const rows: Row[] = [];
    let lastRun: string | null = null;
    for (const trace of all) {
      const key = trace.toolCallId ? `${trace.runId}:${trace.toolCallId}` : null;
      if (trace.kind === 'tool_result' && key && calls.has(key)) {
        continue; // shown under its call
      }
      if (trace.kind === 'tool_call' && key) {
        calls.add(key);
      }
      rows.push({ newRun: trace.runId !== lastRun, output: trace.kind === 'tool_call' && key ? (results.get(key) ?? null) : null, trace });
      lastRun = trace.runId;
    }
    return rows;
  });

  protected readonly visible = computed(() => this.rows().slice(Math.max(0, this.rows().length - this.count())));
  protected readonly hidden = computed(() => Math.max(0, this.rows().length - this.count()));

  constructor() {
    afterRenderEffect({
      write: () => {
        this.visible();
        if (this.atBottom) {
          const el = this.scroller().nativeElement;
          el.scrollTop = el.scrollHeight;
        }
      },
    });
  }

  protected onScroll(): void {
    const el = this.scroller().nativeElement;
    this.atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
  }
}
