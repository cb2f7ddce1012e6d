import * as path from 'node:path';

import { query } from '../../test/support/db-snapshot';
import { send } from '../../test/support/http';
import { pgQuery } from '../../test/support/postgres';
import { ManagerProcess, ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { connectSse } from '../../test/support/sse-client';
import { ScenarioResult, percentile, progress, round } from '../harness';

const RATE = 2000;
const SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 30);
export const FLOOD_AGENT = path.join(ROOT, 'bench', 'agents', 'flood-agent.js');

/** Sequential GET /api/health for `ms`; returns the latencies. */
async function pollHealth(manager: ManagerProcess, ms: number): Promise<number[]> {
  const latencies: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const t = performance.now();
    await send(manager.origin, 'GET', '/api/health');
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return latencies.sort((a, b) => a - b);
}

/**
 * A synthetic agent prints 2,000 JSONL events/s for 30 s while a client polls the API and
 * another reads the SSE stream: every event must be persisted, and the API must stay fast.
 */
export async function traceFloodScenario({ postgresUrl }: { postgresUrl?: string } = {}): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: { CODE_FACTORY_CODEX_EXECUTABLE: FLOOD_AGENT, FLOOD_RATE: String(RATE), FLOOD_SECONDS: String(SECONDS) },
    sandbox,
  });
  try {
    const requirement = (await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title: 'flood' }))
      .json.id as string;
    progress('trace-flood: idle API latency (5 s)');
    const idle = await pollHealth(manager, 5000);
    const stream = await connectSse(`${manager.origin}/api/events`, {}, { parse: false });
    await send(manager.origin, 'GET', '/api/metrics?reset=true');
    progress(`trace-flood: agent printing ${RATE} events/s for ${SECONDS} s`);
    const started = Date.now();
    await send(manager.origin, 'POST', `/api/requirements/${requirement}/start`, { message: 'flood' });
    const during = pollHealth(manager, SECONDS * 1000 - 1000);
    let run: { id: string; status: string } | undefined;
    const duringLatencies = await during;
    for (;;) {
      run = (await send(manager.origin, 'GET', `/api/runs?requirementId=${requirement}`)).json.items[0];
      if (run && run.status !== 'running') {
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const wall = (Date.now() - started) / 1000;
    const metrics = (await send(manager.origin, 'GET', '/api/metrics')).json;
    await new Promise((r) => setTimeout(r, 500));
    stream.close();
    // On PostgreSQL (the manager's store from CODE_FACTORY_DATABASE_URL) the workspace's schema.
    const count = `SELECT COUNT(*) AS n FROM manager_event WHERE run_id = ? AND type = 'run.trace.appended' AND payload LIKE '%"kind":"reasoning"%'`;
    const [stored] = postgresUrl
      ? await pgQuery<{ n: number }>(manager.dataDirectory(), count, [run.id])
      : await query<{ n: number }>(path.join(manager.dataDirectory(), 'factory.sqlite'), count, [run.id]);
    const streamed = stream.events.filter((e) => e.event === 'run.trace.appended').length;
    const expected = RATE * SECONDS;
    const idleP99 = percentile(idle, 99);
    const floodP99 = percentile(duringLatencies, 99);
    return {
      figures: [
        {
          name: 'run outcome succeeded',
          target: { op: '>=', value: 1 },
          unit: '',
          value: run.status === 'succeeded' ? 1 : 0,
        },
        {
          name: 'reasoning events persisted / printed',
          target: { op: '>=', value: 1 },
          unit: '',
          value: round((stored?.n ?? 0) / expected, 4),
        },
        { name: 'trace events streamed to SSE client', unit: '', value: streamed },
        { name: 'run wall time', unit: 's', value: round(wall, 1) },
        // What the store kept up with: the agent prints at RATE, so this stays near it while the writes keep pace.
        { name: 'reasoning events persisted per second of run', unit: '/s', value: round((stored?.n ?? 0) / wall, 0) },
        { name: 'health p99 idle', unit: 'ms', value: round(idleP99) },
        { name: 'health p99 during flood', unit: 'ms', value: round(floodP99) },
        { name: 'health p99 flood / idle', target: { op: '<=', value: 3 }, unit: '', value: round(floodP99 / idleP99) },
        { name: 'event-loop delay p99 during flood', unit: 'ms', value: metrics.eventLoopDelayMs.p99 },
      ],
      notes: [`${expected} reasoning events printed`],
      scenario: 'trace-flood',
    };
  } finally {
    await manager.stop();
    sandbox.cleanup();
  }
}
