import { IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';

import { EventStreamService } from '../events/event-stream.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';

/** Process health figures for benchmarks, soak tests and operators. */
@Injectable()
export class MetricsService implements OnModuleInit, OnModuleDestroy {
  private histogram: IntervalHistogram | undefined;

  constructor(
    private readonly runs: RunLifecycle,
    private readonly stream: EventStreamService,
  ) {}

  onModuleInit(): void {
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
  }

  onModuleDestroy(): void {
    this.histogram?.disable();
  }

  snapshot(reset: boolean) {
    const h = this.histogram as IntervalHistogram;
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const result = {
      activeRuns: this.runs.activeRunCount,
      eventLoopDelayMs: { max: ms(h.max), p50: ms(h.percentile(50)), p99: ms(h.percentile(99)) },
      heapUsedBytes: process.memoryUsage().heapUsed,
      rssBytes: process.memoryUsage().rss,
      sseClients: this.stream.connectionCount,
      uptimeSeconds: Math.round(process.uptime()),
    };
    if (reset) {
      h.reset();
    }
    return result;
  }
}
