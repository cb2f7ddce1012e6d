import type { Schemas } from '@libs/api-client';

import { ok } from '../../test/support/api';
import { WORKTREE_AGENT, createRequirement, initRepository, sh, startRun } from '../../test/support/git-repo';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { NotificationReceiver } from '../../test/support/notification-receiver';
import { connectSse } from '../../test/support/sse-client';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const ROUNDS = 20;
const BUSY_AGENTS = 20;

const sorted = (list: number[]) => [...list].sort((a, b) => a - b);

/**
 * Issue 47's benchmark: how long after its cause a Needs-you item reaches a webhook (a channel
 * with no delay) and another dashboard's event stream, with twenty agents running. The cause is
 * a person cancelling a Requirement another one waits for (`dependency_cancelled` on the waiting
 * one): its answer is the commit, the clock starts there. Each round has a channel of its own, so
 * no round waits in the previous one's 10 s coalescing window.
 */
export async function attentionScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  initRepository(sandbox.workspace, { 'README.md': '# attention bench\n' });
  const receiver = await NotificationReceiver.start();
  let manager: ManagerProcess | null = null;
  const toWebhook: number[] = [];
  const toDashboard: number[] = [];
  try {
    manager = await startManager({
      args: ['--log-level', 'warn'],
      env: { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT },
      sandbox,
    });
    const m = manager;
    progress(`attention: ${BUSY_AGENTS} agents running`);
    const busy = await Promise.all(
      Array.from({ length: BUSY_AGENTS }, (_, k) => createRequirement(m, { title: `Busy ${k}` })),
    );
    await Promise.all(busy.map((r) => startRun(m, r.id, sh('sleep 120'))));
    await until(
      'the agents running',
      async () =>
        (await ok(m.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.filter(
          (r) => r.session.state === 'running',
        ).length >= BUSY_AGENTS || undefined,
      60_000,
    );
    const stream = await connectSse(`${m.origin}/api/events`);
    try {
      for (let round = 0; round < ROUNDS; round++) {
        progress(`attention: round ${round + 1}/${ROUNDS}`);
        const path = `/round-${round}`;
        await ok(
          m.api.PATCH('/api/configuration', {
            body: {
              notificationChannels: [
                {
                  id: `round-${round}`,
                  kind: 'webhook',
                  reasons: ['dependency_cancelled'],
                  url: `${receiver.url}${path}`,
                },
              ] as Schemas['NotificationChannelDto'][],
            },
          }),
        );
        const cause = await createRequirement(m, { title: `Cause ${round}` });
        const waiting = await createRequirement(m, {
          dependsOn: [{ requirementId: cause.id, until: 'done' }],
          title: `Waits ${round}`,
        });
        const started = Date.now();
        await ok(m.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: cause.id } } }));
        const seen = stream.waitUntil(
          (e) =>
            e.data.type === 'attention.opened' &&
            (e.data.payload.item as { requirementId: string }).requirementId === waiting.id,
          `attention.opened of ${waiting.id}`,
          30_000,
        );
        const [event] = await Promise.all([seen, until('the webhook', async () => receiver.on(path)[0], 30_000, 5)]);
        toDashboard.push(event.receivedAtMs - started);
        toWebhook.push((receiver.on(path)[0]?.at ?? Date.now()) - started);
      }
    } finally {
      stream.close();
    }
    await Promise.all(busy.map((r) => m.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: r.id } } })));
  } finally {
    await manager?.stop();
    await receiver.close();
    sandbox.cleanup();
  }
  const p = (list: number[], at: number) => round(percentile(sorted(list), at), 0);
  return {
    figures: [
      {
        name: `cause → webhook received, p95 of ${ROUNDS} (delaySeconds 0, ${BUSY_AGENTS} agents running)`,
        target: { op: '<=', value: 2000 },
        unit: 'ms',
        value: p(toWebhook, 95),
      },
      { name: 'cause → webhook received, p50', unit: 'ms', value: p(toWebhook, 50) },
      {
        name: `cause → item on another dashboard's stream, p95 of ${ROUNDS}`,
        target: { op: '<=', value: 200 },
        unit: 'ms',
        value: p(toDashboard, 95),
      },
      { name: "cause → item on another dashboard's stream, p50", unit: 'ms', value: p(toDashboard, 50) },
    ],
    notes: [`webhook ${toWebhook.join(', ')} ms`, `dashboard ${toDashboard.join(', ')} ms`],
    scenario: 'attention',
  };
}
