import * as fs from 'node:fs';
import * as path from 'node:path';

import { query } from '../test/support/db-snapshot';
import { initRepository } from '../test/support/git-repo';
import { send } from '../test/support/http';
import { ROOT, makeSandbox, startManager } from '../test/support/manager-process';
import { SseConnection, connectSse } from '../test/support/sse-client';
import { progress, round } from './harness';
import { FLOOD_AGENT } from './scenarios/trace-flood';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const SAMPLE_EVERY_MS = 10_000;
const REQUIREMENTS = 20;
/** Every fifth Requirement's runs use the run's MCP server (bench/agents/mcp-agent.js, picked by the title). */
const MCP_EVERY = 5;

interface Sample {
  atSeconds: number;
  rssMb: number;
  heapMb: number;
  loopP99Ms: number;
  loopMaxMs: number;
  sseClients: number;
  activeRuns: number;
  replies: number;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

/**
 * `npm run soak`: steady mixed load on one manager for SOAK_MINUTES (default 30) — replies that
 * keep synthetic agents running (each run prints 100 trace events over 2 s), SSE clients that
 * come and go, timers created and cancelled, list and conversation reads — sampling RSS, heap
 * and event-loop delay every 10 s. Memory must not grow without bound: the report gives the
 * RSS slope over the second half (after warm-up) in MB per hour.
 */
async function main(): Promise<void> {
  const sandbox = makeSandbox();
  // A git workspace: every Requirement's runs happen in its own worktree, as by default.
  initRepository(sandbox.workspace, { 'README.md': '# soak\n', 'src/index.ts': 'export {};\n' });
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: {
      CLI_CALLS: '0',
      CODE_FACTORY_CODEX_EXECUTABLE: FLOOD_AGENT,
      FLOOD_RATE: '50',
      FLOOD_SECONDS: '2',
      MCP_CALL_INTERVAL_MS: '100',
      MCP_CALLS: '20',
    },
    sandbox,
  });
  const ids: string[] = [];
  for (let i = 0; i < REQUIREMENTS; i++) {
    ids.push(
      (
        await send(manager.origin, 'POST', '/api/requirements', {
          provider: 'codex',
          title: `soak ${i}${i % MCP_EVERY === 0 ? ' [mcp]' : ''}`,
        })
      ).json.id,
    );
  }
  const end = Date.now() + MINUTES * 60_000;
  let replies = 0;
  let live = true;
  const workers: Array<Promise<void>> = [];
  // Replies at ~20/s overall: runs start, continue and queue.
  for (let w = 0; w < 4; w++) {
    workers.push(
      (async () => {
        for (let i = 0; live; i++) {
          const id = ids[(w * 7 + i) % ids.length];
          const res = await send(manager.origin, 'POST', `/api/requirements/${id}/reply`, {
            message: `soak reply ${w}-${i} ${'x'.repeat(i % 500)}`,
          });
          replies += res.status === 202 ? 1 : 0;
          await new Promise((r) => setTimeout(r, 200));
        }
      })(),
    );
  }
  // Readers: lists and conversation pages.
  workers.push(
    (async () => {
      for (let i = 0; live; i++) {
        await send(manager.origin, 'GET', '/api/requirements?limit=50');
        await send(manager.origin, 'GET', `/api/requirements/${ids[i % ids.length]}/messages?limit=100`);
        await send(manager.origin, 'GET', `/api/runs?requirementId=${ids[i % ids.length]}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })(),
  );
  // Timers created and cancelled.
  workers.push(
    (async () => {
      for (let i = 0; live; i++) {
        const id = ids[i % ids.length];
        const timer = (
          await send(manager.origin, 'POST', `/api/requirements/${id}/timers`, {
            description: `soak ${i}`,
            intervalSeconds: 3600,
            schedule: 'recurring',
          })
        ).json;
        await new Promise((r) => setTimeout(r, 1_000));
        await send(manager.origin, 'DELETE', `/api/requirements/${id}/timers/${timer.id}`);
      }
    })(),
  );
  // SSE clients: 10 steady, and one that reconnects every 5 s from its last id.
  const steady: SseConnection[] = [];
  for (let i = 0; i < 10; i++) {
    steady.push(await connectSse(`${manager.origin}/api/events`, {}, { parse: false }));
  }
  workers.push(
    (async () => {
      let last = 0;
      while (live) {
        const client = await connectSse(`${manager.origin}/api/events?after=${last}`, {}, { parse: false });
        await new Promise((r) => setTimeout(r, 5_000));
        last = client.events[client.events.length - 1]?.id ?? last;
        client.close();
      }
    })(),
  );
  // Steady clients drop what they read so the soak measures the server, not this process.
  const drain = setInterval(() => steady.forEach((c) => c.events.splice(0)), 1_000);

  const samples: Sample[] = [];
  const started = Date.now();
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
    const metrics = (await send(manager.origin, 'GET', '/api/metrics?reset=true')).json;
    const sample: Sample = {
      activeRuns: metrics.activeRuns,
      atSeconds: Math.round((Date.now() - started) / 1000),
      heapMb: round(metrics.heapUsedBytes / 2 ** 20, 1),
      loopMaxMs: round(metrics.eventLoopDelayMs.max, 1),
      loopP99Ms: round(metrics.eventLoopDelayMs.p99, 1),
      replies,
      rssMb: round(metrics.rssBytes / 2 ** 20, 1),
      sseClients: metrics.sseClients,
    };
    samples.push(sample);
    progress(
      `soak ${sample.atSeconds}s: rss ${sample.rssMb} MB, heap ${sample.heapMb} MB, loop p99 ${sample.loopP99Ms} ms, runs ${sample.activeRuns}, replies ${replies}`,
    );
  }
  live = false;
  clearInterval(drain);
  steady.forEach((c) => c.close());
  await Promise.allSettled(workers);
  await manager.stop();
  // How the runs ended: an MCP call that failed fails its run.
  const database = path.join(manager.dataDirectory(), 'factory.sqlite');
  const runs = await query<{ kind: string; status: string; n: number }>(
    database,
    "SELECT CASE WHEN q.title LIKE '%[mcp]%' THEN 'mcp' ELSE 'flood' END AS kind, r.status, COUNT(*) AS n FROM agent_run r JOIN requirement q ON q.id = r.requirement_id GROUP BY kind, r.status",
  );
  const worktrees =
    (
      await query<{ n: number }>(
        database,
        'SELECT COUNT(*) AS n FROM requirement_worktree WHERE created_at IS NOT NULL',
      )
    )[0]?.n ?? 0;
  sandbox.cleanup();

  const secondHalf = samples.slice(Math.floor(samples.length / 2));
  const rssSlope = round(slope(secondHalf.map((s) => [s.atSeconds / 3600, s.rssMb])), 1);
  const heapSlope = round(slope(secondHalf.map((s) => [s.atSeconds / 3600, s.heapMb])), 1);
  const loop = samples.map((s) => s.loopP99Ms).sort((a, b) => a - b);
  const summary = {
    minutes: MINUTES,
    replies,
    rssMb: {
      first: samples[0]?.rssMb,
      last: samples[samples.length - 1]?.rssMb,
      max: Math.max(...samples.map((s) => s.rssMb)),
    },
    rssSlopeMbPerHourSecondHalf: rssSlope,
    heapSlopeMbPerHourSecondHalf: heapSlope,
    eventLoopP99Ms: { median: loop[Math.floor(loop.length / 2)], worst: loop[loop.length - 1] },
    activeRuns: {
      median: [...samples.map((s) => s.activeRuns)].sort((a, b) => a - b)[Math.floor(samples.length / 2)],
      min: Math.min(...samples.map((s) => s.activeRuns)),
    },
    runs: Object.fromEntries(runs.map((r) => [`${r.kind} ${r.status}`, Number(r.n)])),
    worktrees,
  };
  const file = path.join(ROOT, 'bench', 'results', 'soak.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ samples, summary, when: new Date().toISOString() }, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  progress(`soak results written to ${path.relative(ROOT, file)}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
