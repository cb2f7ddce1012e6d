import { spawn } from 'node:child_process';

import { send } from '../../test/support/http';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { ScenarioResult, percentile, progress, round } from '../harness';
import { FLOOD_AGENT } from './trace-flood';

const CONCURRENT = 20;

/**
 * Watches for runs' ends with one listing of the newest runs every 25 ms, however many runs are
 * waited for. A listing per run (as before 2026-12-05) made the bench's own load grow with the
 * concurrency it measures: 800 requests/s at 20 runs, a third of the manager's main thread.
 */
class RunWatcher {
  private readonly waiting = new Map<
    string,
    { resolve(ms: number): void; reject(err: Error): void; started: number }
  >();
  private timer: NodeJS.Timeout | undefined;
  private waited = 0;

  constructor(private readonly manager: ManagerProcess) {}

  wait(requirementId: string, started: number): Promise<number> {
    this.waited++;
    return new Promise((resolve, reject) => {
      this.waiting.set(requirementId, { reject, resolve, started });
      this.timer ??= setTimeout(() => void this.poll(), 25);
    });
  }

  private async poll(): Promise<void> {
    try {
      // As many of the newest runs as were ever waited for (every run here is one): a hundred
      // runs' JSON every 25 ms was still a quarter of the manager's busy time with twenty going.
      const limit = Math.min(100, this.waited);
      const runs = (await send(this.manager.origin, 'GET', `/api/runs?limit=${limit}`)).json.items as Array<{
        id: string;
        requirementId: string;
        status: string;
        error: string | null;
      }>;
      for (const run of runs) {
        const waiter = this.waiting.get(run.requirementId);
        if (waiter && run.status !== 'running') {
          this.waiting.delete(run.requirementId);
          if (run.status === 'succeeded') {
            waiter.resolve(performance.now() - waiter.started);
          } else {
            waiter.reject(new Error(`run ${run.id} ended ${run.status}: ${run.error}`));
          }
        }
      }
    } catch (err) {
      for (const waiter of this.waiting.values()) {
        waiter.reject(err as Error);
      }
      this.waiting.clear();
    }
    this.timer = this.waiting.size > 0 ? setTimeout(() => void this.poll(), 25) : undefined;
  }
}

async function runOnce(manager: ManagerProcess, watcher: RunWatcher, title: string): Promise<number> {
  const id = (await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title })).json.id as string;
  const started = performance.now();
  await send(manager.origin, 'POST', `/api/requirements/${id}/start`, { message: title });
  return watcher.wait(id, started);
}

/**
 * The same agent started straight from here, no manager (in bubblewrap as the manager starts it):
 * what the machine itself allows. Twenty Node.js processes starting at once fill two cores
 * (≈ 0.1 s of CPU each), so this ratio is the floor under the manager's.
 */
function agentAlone(): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      'bwrap',
      [
        '--ro-bind',
        '/',
        '/',
        '--dev-bind',
        '/dev',
        '/dev',
        '--unshare-pid',
        '--proc',
        '/proc',
        process.execPath,
        FLOOD_AGENT,
      ],
      {
        env: { ...process.env, FLOOD_RATE: '200', FLOOD_SECONDS: '1' },
        stdio: ['pipe', 'pipe', 'ignore'],
      },
    );
    child.stdout.resume();
    child.stdin.end('go');
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`the agent alone exited ${code}`)),
    );
  });
}

/** 20 runs at once (a synthetic agent printing 200 events over 1 s each) vs one alone. */
export async function concurrentRunsScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: { CODE_FACTORY_CODEX_EXECUTABLE: FLOOD_AGENT, FLOOD_RATE: '200', FLOOD_SECONDS: '1' },
    sandbox,
  });
  try {
    const watcher = new RunWatcher(manager);
    progress('concurrent-runs: one run alone (x3)');
    const single = [];
    for (let i = 0; i < 3; i++) {
      single.push(await runOnce(manager, watcher, `single ${i}`));
    }
    progress(`concurrent-runs: the agent alone, no manager (x3, then ${CONCURRENT} at once)`);
    const floorSingle = [];
    for (let i = 0; i < 3; i++) {
      floorSingle.push(await agentAlone());
    }
    const floorEach = (await Promise.all(Array.from({ length: CONCURRENT }, () => agentAlone()))).sort((a, b) => a - b);
    const floor =
      percentile(floorEach, 50) /
      percentile(
        floorSingle.sort((a, b) => a - b),
        50,
      );
    progress(`concurrent-runs: ${CONCURRENT} runs at once`);
    const started = performance.now();
    const each = (
      await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => runOnce(manager, watcher, `parallel ${i}`)))
    ).sort((a, b) => a - b);
    const total = performance.now() - started;
    const alone = percentile(
      single.sort((a, b) => a - b),
      50,
    );
    return {
      figures: [
        { name: 'single run wall time (median of 3)', unit: 'ms', value: round(alone, 0) },
        { name: `${CONCURRENT} concurrent: p50 run wall time`, unit: 'ms', value: round(percentile(each, 50), 0) },
        { name: `${CONCURRENT} concurrent: slowest run`, unit: 'ms', value: round(each[each.length - 1], 0) },
        { name: `${CONCURRENT} concurrent: all done`, unit: 'ms', value: round(total, 0) },
        { name: 'concurrent p50 / single', unit: '', value: round(percentile(each, 50) / alone) },
        {
          name: `the agent alone, no manager: ${CONCURRENT} at once p50 / single (the machine's floor)`,
          unit: '',
          value: round(floor),
        },
      ],
      scenario: 'concurrent-runs',
    };
  } finally {
    await manager.stop();
    sandbox.cleanup();
  }
}
