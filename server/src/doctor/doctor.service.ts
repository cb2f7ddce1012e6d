import { Inject, Injectable } from '@nestjs/common';

import { Clock } from '../core/clock';
import { RUNTIME, Runtime } from '../core/runtime';
import { runningInstance } from '../core/workspace/instance-lock';
import { runDoctor } from './doctor-checks';
import type { DoctorReportDto } from './dto/doctor-report.dto';

/** Findings younger than this are answered as they are: the dashboard asks on every load. */
const FRESH_MS = 60_000;

/**
 * `agent-manager doctor`'s findings for the running manager (the dashboard's setup panel). The
 * probes run the agent CLIs' status commands and reach GitHub, seconds of work, so one
 * probe at a time is shared by every request that arrives while it runs, and its result is
 * kept for a minute: no number of requests costs more than one probe a minute, or one per
 * explicit refresh in flight.
 */
@Injectable()
export class DoctorService {
  private last: DoctorReportDto | undefined;
  private running: Promise<DoctorReportDto> | undefined;

  constructor(
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly clock: Clock,
  ) {}

  report(refresh: boolean): Promise<DoctorReportDto> {
    if (this.running) {
      return this.running;
    }
    if (!refresh && this.last && this.clock.now().getTime() - Date.parse(this.last.checkedAt) < FRESH_MS) {
      return Promise.resolve(this.last);
    }
    this.running = this.probe().finally(() => (this.running = undefined));
    return this.running;
  }

  private async probe(): Promise<DoctorReportDto> {
    const report = await runDoctor({
      env: this.runtime.env ?? process.env,
      overrides: this.runtime.configuration.snapshot().effective,
      serving: runningInstance(this.runtime.paths.lockPath)?.url ?? 'this manager',
      timeoutMs: 10_000,
      workspace: this.runtime.paths.root,
    });
    this.last = { ...report, checkedAt: this.clock.now().toISOString() };
    return this.last;
  }
}
