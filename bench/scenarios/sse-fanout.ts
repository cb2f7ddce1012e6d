import * as http from 'node:http';

import { send } from '../../test/support/http';
import type { ManagerProcess } from '../../test/support/manager-process';
import { SseConnection, SseEvent, connectSse } from '../../test/support/sse-client';
import { ScenarioResult, percentile, progress, round } from '../harness';

const CLIENTS = Number(process.env.BENCH_SSE_CLIENTS ?? 50);
const RATE_PER_S = 200;
const DURATION_S = 10;

/**
 * 50 SSE clients while replies are written at 200/s: latency from the event's creation in the
 * write transaction (server clock) to its arrival at each client (same machine, same clock).
 */
export async function sseFanoutScenario(manager: ManagerProcess): Promise<ScenarioResult> {
  const requirement = (await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title: 'fan-out' }))
    .json.id as string;
  // The first reply starts a run (a silent synthetic agent): every later one is queued behind
  // it, so the measured stream is exactly one message.created per reply.
  await send(manager.origin, 'POST', `/api/requirements/${requirement}/reply`, { message: 'warm-up' });
  await new Promise((r) => setTimeout(r, 200));
  // Each client keeps only what is measured (the event's id and its latency), taken on arrival:
  // keeping every frame made the load generator's own garbage collection the reported tail.
  const clients: SseConnection[] = [];
  const seen: Array<{ ids: number[]; latencies: number[] }> = [];
  let measuring = false;
  for (let i = 0; i < CLIENTS; i++) {
    const tally = { ids: [] as number[], latencies: [] as number[] };
    seen.push(tally);
    const onEvent = (event: SseEvent) => {
      if (measuring && event.event === 'message.created') {
        const createdAt = /"createdAt":"([^"]+)"/.exec(event.raw)?.[1] ?? '';
        tally.ids.push(event.id);
        tally.latencies.push(event.receivedAtMs - Date.parse(createdAt));
      }
    };
    clients.push(await connectSse(`${manager.origin}/api/events`, {}, { keep: false, onEvent, parse: false }));
  }
  const latencies: number[] = [];
  const startIndex = clients.map((c) => c.received);
  measuring = true;
  progress(`sse-fanout: ${CLIENTS} clients, ${RATE_PER_S} replies/s for ${DURATION_S}s`);
  const total = RATE_PER_S * DURATION_S;
  const started = Date.now();
  const inflight: Array<Promise<unknown>> = [];
  // A keep-alive agent rather than fetch(): the load generator shares the machine with the
  // server and 50 clients, so it should spend as little CPU as it can.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const target = new URL(`${manager.origin}/api/requirements/${requirement}/reply`);
  const post = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        target,
        {
          agent,
          headers: { authorization: `Bearer ${manager.token}`, 'content-type': 'application/json' },
          method: 'POST',
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE_PER_S;
    const wait = due - Date.now();
    if (wait > 0) {
      await new Promise((r) => setTimeout(r, wait));
    }
    inflight.push(post(JSON.stringify({ message: `fan-out ${i}` })));
  }
  const statuses = await Promise.all(inflight);
  agent.destroy();
  const achievedRate = total / ((Date.now() - started) / 1000);
  await Promise.all(clients.map((c, i) => c.waitFor(startIndex[i] + total, 30_000)));
  let complete = 0;
  for (const [i, client] of clients.entries()) {
    const { ids } = seen[i];
    if (new Set(ids).size === total && ids.every((id, k) => k === 0 || id > ids[k - 1])) {
      complete++;
    }
    latencies.push(...seen[i].latencies);
    client.close();
  }
  latencies.sort((a, b) => a - b);
  return {
    figures: [
      { name: 'mutation rate achieved', unit: '/s', value: round(achievedRate, 0) },
      {
        name: 'mutations refused',
        target: { op: '<=', value: 0 },
        unit: '',
        value: statuses.filter((s) => s !== 202).length,
      },
      {
        name: 'clients that got every event once, in order',
        target: { op: '>=', value: CLIENTS },
        unit: '',
        value: complete,
      },
      { name: 'commit→client p50', unit: 'ms', value: round(percentile(latencies, 50)) },
      {
        name: 'commit→client p99',
        target: { op: '<=', value: 15 },
        unit: 'ms',
        value: round(percentile(latencies, 99)),
      }, // issue 30
    ],
    notes: [`${latencies.length} deliveries measured; server createdAt has millisecond resolution`],
    scenario: 'sse-fanout',
  };
}
