import { send } from '../../test/support/http';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { ScenarioResult, percentile, progress, round } from '../harness';
import { FLOOD_AGENT } from './trace-flood';

const CONCURRENT = 20;

async function runOnce(manager: ManagerProcess, title: string): Promise<number> {
  const id = (await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title })).json.id as string;
  const started = performance.now();
  await send(manager.origin, 'POST', `/api/requirements/${id}/start`, { message: title });
  for (;;) {
    const run = (await send(manager.origin, 'GET', `/api/runs?requirementId=${id}`)).json.items[0];
    if (run && run.status !== 'running') {
      if (run.status !== 'succeeded') {
        throw new Error(`run ${run.id} ended ${run.status}: ${run.error}`);
      }
      return performance.now() - started;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
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
    progress('concurrent-runs: one run alone (x3)');
    const single = [];
    for (let i = 0; i < 3; i++) {
      single.push(await runOnce(manager, `single ${i}`));
    }
    progress(`concurrent-runs: ${CONCURRENT} runs at once`);
    const started = performance.now();
    const each = (await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => runOnce(manager, `parallel ${i}`)))).sort((a, b) => a - b);
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
      ],
      scenario: 'concurrent-runs',
    };
  } finally {
    await manager.stop();
    sandbox.cleanup();
  }
}
