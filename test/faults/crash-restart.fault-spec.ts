import * as path from 'node:path';

import { execute, query } from '../support/db-snapshot';
import { FakeGitHubServer } from '../support/fake-github-server';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { SseConnection, connectSse } from '../support/sse-client';
import { rng } from '../support/random';
import { until } from '../support/wait';
import { ok } from '../support/api';
import { checkInvariants } from './invariants';

const AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'scripted-agent.js');
/**
 * A CI run crashes 20 times in all: 10 rounds on SQLite and 10 on PostgreSQL (this suite runs in
 * both phases, each with its own random seed). FAULT_ROUNDS asks for more when hunting a fault.
 */
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 10);
const TOKEN = 'ghp_fault_token';
const REPO = 'org/faults';
const REQUIREMENTS = 5;

jest.setTimeout(20 * 60_000);

/**
 * Kill -9 at random moments while replies, starts, steers, runs, timers and GitHub
 * reconciliation are all in flight, restart, and check the invariants (docs/architecture.md#invariants) after every round:
 * nothing acknowledged is lost, nothing is delivered twice, no cursor passes what succeeded
 * runs took, no run stays `running` across a restart, event ids are never reused.
 */
describe('kill -9 under load, then restart', () => {
  const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
  const random = rng(seed);
  let sandbox: Sandbox;
  let github: FakeGitHubServer;
  let manager: ManagerProcess;
  const requirements: string[] = [];
  /** Replies the server acknowledged (202): each must be in the store after any crash. */
  const acknowledged: Array<{ requirementId: string; body: string }> = [];
  /** Events the stream delivered: each must be in the store, with the same type, for good. */
  const published = new Map<number, string>();
  let comments = 0;
  /** When the running manager process was launched. */
  let launchedAt = '';

  const start = async () => {
    launchedAt = new Date().toISOString();
    manager = await startManager({
      args: ['--log-level', 'warn'],
      env: {
        CODE_FACTORY_CLAUDE_EXECUTABLE: AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: AGENT,
        CODE_FACTORY_GITHUB_API_URL: github.url,
        CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '1',
        GITHUB_TOKEN: TOKEN,
      },
      sandbox,
    });
  };
  const db = () => path.join(manager.dataDirectory(), 'factory.sqlite');
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];

  beforeAll(async () => {
    sandbox = makeSandbox();
    github = await FakeGitHubServer.start({ token: TOKEN });
    await start();
    for (let i = 0; i < REQUIREMENTS; i++) {
      const created = await ok(
        manager.api.POST('/api/requirements', {
          body: { provider: i % 2 ? 'claude-code' : 'codex', title: `fault ${i}` },
        }),
      );
      requirements.push(created.id);
    }
    // Three Requirements open a PR each, through their agent and code-factory-cli.
    for (let i = 0; i < 3; i++) {
      const pr = github.addPullRequest({ number: 100 + i, repository: REPO });
      await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: requirements[i] } },
        body: { message: `mode:pr pr#${100 + i} repo:${REPO} sha:${pr.headSha}` },
      });
    }
    await until(
      'the PRs to be registered',
      async () => (await ok(manager.api.GET('/api/pull-requests'))).items.length === 3 || undefined,
      30_000,
      100,
    );
    // Their first observation is the baseline: comments from now on are news.
    await until(
      "the PRs' baseline",
      async () =>
        (
          await query<{ n: number }>(
            db(),
            'SELECT COUNT(*) AS n FROM pull_request WHERE github_observed_at IS NOT NULL',
          )
        )[0]?.n === 3 || undefined,
      30_000,
      100,
    );
  });

  afterAll(async () => {
    await manager?.stop().catch(() => undefined);
    await github?.close();
    sandbox?.cleanup();
  });

  it(`keeps every invariant across ${ROUNDS} crashes (seed ${seed})`, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      // Nothing from before this process may still be running once it listens.
      const stale = await query<{ id: string }>(
        db(),
        "SELECT id FROM agent_run WHERE status = 'running' AND started_at < ?",
        [launchedAt],
      );
      expect({ round, stale }).toEqual({ round, stale: [] });

      const stream: SseConnection = await connectSse(`${manager.origin}/api/events`);
      let live = true;
      const load: Array<Promise<unknown>> = [];
      // Replies, starts, steers and stops from a few clients at once.
      for (let client = 0; client < 4; client++) {
        load.push(
          (async () => {
            for (let i = 0; live; i++) {
              const requirementId = pick(requirements);
              const roll = random();
              try {
                if (roll < 0.7) {
                  const body = `round ${round} client ${client} reply ${i}${random() < 0.1 ? ' mode:hang' : ''}`;
                  const res = await manager.api.POST('/api/requirements/{id}/reply', {
                    params: { path: { id: requirementId } },
                    body: { message: body },
                  });
                  if (res.status === 202) {
                    acknowledged.push({ body, requirementId });
                  }
                } else if (roll < 0.8) {
                  await manager.api.POST('/api/requirements/{id}/start', {
                    params: { path: { id: requirementId } },
                    body: {},
                  });
                } else if (roll < 0.9) {
                  await manager.api.POST('/api/requirements/{id}/interrupt', {
                    params: { path: { id: requirementId } },
                    body: { mode: random() < 0.5 ? 'steer' : 'stop' },
                  });
                } else {
                  await manager.api.POST('/api/requirements/{id}/timers', {
                    params: { path: { id: requirementId } },
                    body: {
                      description: `round ${round}`,
                      intervalSeconds: 60,
                      schedule: random() < 0.5 ? 'once' : 'recurring',
                    },
                  });
                }
              } catch {
                // the manager was killed under us: expected
              }
              await new Promise((r) => setTimeout(r, random() * 40));
            }
          })(),
        );
      }
      // GitHub keeps talking: new comments and a failing check land while the manager works.
      for (let i = 0; i < 3; i++) {
        github.addComment(REPO, 100 + i, { author: 'reviewer', body: `comment ${++comments}` });
      }
      if (round % 5 === 0) {
        github.setCheckRun(REPO, 100 + (round % 3), {
          conclusion: 'FAILURE',
          name: `check-${round}`,
          status: 'COMPLETED',
        });
      }

      await new Promise((r) => setTimeout(r, 300 + random() * 1500));
      for (const event of stream.events) {
        published.set(event.id, event.event);
      }
      await manager.kill9();
      live = false;
      stream.close();
      await Promise.allSettled(load);

      expect({ problems: await checkInvariants(manager.dataDirectory()), round }).toEqual({ problems: [], round });
      const humans = new Set(
        (
          await query<{ requirement_id: string; body: string }>(
            db(),
            "SELECT requirement_id, body FROM requirement_message WHERE author = 'human'",
          )
        ).map((m) => `${m.requirement_id} ${m.body}`),
      );
      expect({ lost: acknowledged.filter((a) => !humans.has(`${a.requirementId} ${a.body}`)), round }).toEqual({
        lost: [],
        round,
      });
      const stored = new Map(
        (await query<{ id: number; type: string }>(db(), 'SELECT id, type FROM manager_event')).map((e) => [
          e.id,
          e.type,
        ]),
      );
      const missing = [...published].filter(([id, type]) => stored.get(id) !== type);
      expect({ missing, round }).toEqual({ missing: [], round });

      // Time passes while it is down: every active timer comes due (some long overdue).
      await execute(db(), "UPDATE agent_timer SET next_fire_at = ? WHERE status = 'active'", [
        new Date(Date.now() - Math.floor(random() * 600) * 1000).toISOString(),
      ]);
      const maxBefore = Math.max(0, ...stored.keys());
      await start();
      const after = await connectSse(`${manager.origin}/api/events?after=${maxBefore}`);
      // Event ids continue past everything stored before, never reused: a marker written now
      // and every event before it (the restart's own: reconciliation, overdue timers) say so.
      const marker = (
        await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: `marker ${round}` } }))
      ).id;
      const created = await after.waitUntil(
        (e) => e.event === 'requirement.created' && e.data.requirementId === marker,
        'the marker after the restart',
      );
      expect({ reused: after.events.filter((e) => e.id <= maxBefore).map((e) => e.id), round }).toEqual({
        reused: [],
        round,
      });
      expect(created.id).toBeGreaterThan(maxBefore);
      after.close();
    }

    // Quiet down, then everything GitHub said has arrived exactly once and every timer occurrence once.
    await until(
      'every GitHub comment to arrive',
      async () => {
        const [row] = await query<{ n: number }>(
          db(),
          "SELECT COUNT(*) AS n FROM requirement_message WHERE trigger_id = 'github.pull-request.comment'",
        );
        return (row?.n ?? 0) >= comments || undefined;
      },
      60_000,
      250,
    );
    const [delivered] = await query<{ n: number }>(
      db(),
      "SELECT COUNT(*) AS n FROM requirement_message WHERE trigger_id = 'github.pull-request.comment'",
    );
    expect(delivered?.n).toBe(comments);
    await manager.stop();
    expect(await checkInvariants(manager.dataDirectory())).toEqual([]);
    const [timers] = await query<{ due: number }>(
      db(),
      "SELECT COUNT(*) AS due FROM agent_timer WHERE status = 'active' AND next_fire_at < ?",
      [new Date(Date.now() - 5000).toISOString()],
    );
    expect(timers?.due).toBe(0);
    process.stdout.write(
      `fault rounds: ${ROUNDS}, replies acknowledged: ${acknowledged.length}, events seen: ${published.size}, GitHub comments: ${comments}\n`,
    );
  });
});
