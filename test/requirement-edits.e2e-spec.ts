import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { query } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { REAL_AGENT_CLIS } from './support/model-stub';
import { type RealAgentWorld, useRealAgentWorld } from './support/real-agent-world';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

// Issue 16 §2 and §5 and the "Start with nothing new" defect, end to end with the real Claude Code
// CLI (its result reports a cost) driven by the model stub: edit, fork and cancel go through the
// state machine with their events; a start refuses to run the agent on nothing; usage totals.

const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-edits-sleeper`;
const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;

jest.setTimeout(120_000);

type Requirement = Schemas['RequirementResponseDto'];

describe('editing, forking and cancelling Requirements (real Claude Code)', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CLAUDE, 'edits', (w) => (world = w));

  const dataDirectory = () => world.manager.dataDirectory();
  const get = async (id: string): Promise<Requirement> =>
    await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const create = async (title: string): Promise<Requirement> =>
    await ok(
      world.manager.api.POST('/api/requirements', {
        body: { description: 'Report the durations.', provider: 'codex', title },
      }),
    );
  /** The event types written for a Requirement, in order (from the store: the SSE stream's source). */
  const eventTypes = async (id: string) =>
    (
      await query<{ type: string }>(
        path.join(dataDirectory(), 'factory.sqlite'),
        'SELECT type FROM manager_event WHERE requirement_id = ? ORDER BY id',
        [id],
      )
    ).map((e) => e.type);
  const waiting = (id: string) =>
    until(
      `${id} waiting`,
      async () => ((await get(id)).status === 'waiting_confirmation' ? get(id) : undefined),
      90_000,
    );

  it('PATCH edits a todo Requirement (provider included, its session follows) with a requirement.updated event', async () => {
    const req = await create('Draft title');
    const res = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: {
        description: 'Now with **flush** timings.',
        model: 'claude-sonnet-4-5',
        provider: 'claude-code',
        reasoningEffort: 'high',
        title: 'Final title',
      },
    });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({
      description: 'Now with **flush** timings.',
      model: 'claude-sonnet-4-5',
      provider: 'claude-code',
      reasoningEffort: 'high',
      session: { provider: 'claude-code', state: 'idle' },
      status: 'todo',
      title: 'Final title',
    });
    expect(await get(req.id)).toMatchObject({ provider: 'claude-code', title: 'Final title' });
    // The search index follows the edit in the same unit: the new words find it, the old ones do not.
    const found = async (q: string) =>
      (await ok(world.manager.api.GET('/api/search', { params: { query: { q } } }))).items.some(
        (i) => i.requirementId === req.id,
      );
    await expect(found('flush')).resolves.toBe(true);
    await expect(found('Draft')).resolves.toBe(false);
    // Clearing the model goes back to the provider's default.
    expect(
      (
        await ok(
          world.manager.api.PATCH('/api/requirements/{id}', {
            params: { path: { id: req.id } },
            body: { model: null },
          }),
        )
      ).model,
    ).toBeNull();
    expect(await eventTypes(req.id)).toEqual(['requirement.created', 'requirement.updated', 'requirement.updated']);
  });

  it('refuses bad edits with a clear 4xx and writes nothing', async () => {
    const req = await create('Refusals');
    await expectRefused(
      dataDirectory(),
      () => world.manager.api.PATCH('/api/requirements/{id}', { params: { path: { id: req.id } }, body: {} }),
      400,
      'nothing_to_update',
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: req.id } },
          body: { title: 'x'.repeat(201) },
        }),
      400,
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', { params: { path: { id: req.id } }, body: { title: '   ' } }),
      400,
    );
    // An unknown provider and a field the API does not take: untyped on purpose.
    await expectRefused(
      dataDirectory(),
      () => sendUntyped(world.manager.origin, 'PATCH', `/api/requirements/${req.id}`, { provider: 'gpt' }),
      400,
    );
    await expectRefused(
      dataDirectory(),
      () => sendUntyped(world.manager.origin, 'PATCH', `/api/requirements/${req.id}`, { status: 'done' }),
      400,
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
          body: { title: 'y' },
        }),
      404,
    );
    expect((await get(req.id)).title).toBe('Refusals');
  });

  let ran: Requirement;

  it('runs, then refuses a Start with nothing new (no duplicate answer), and a title edit after the start', async () => {
    const req = await create('Ran once');
    await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { provider: 'claude-code' },
    });
    world.stub.scriptFor(req.id, [{ text: 'Done once.' }]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: `Go ${req.id}` },
        })
      ).status,
    ).toBe(202);
    ran = await waiting(req.id);
    expect(ran.session.pendingMessageCount).toBe(0);

    await expectRefused(
      dataDirectory(),
      () => world.manager.api.POST('/api/requirements/{id}/start', { params: { path: { id: req.id } }, body: {} }),
      409,
      'nothing_to_deliver',
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: req.id } },
          body: { title: 'Renamed' },
        }),
      409,
      'requirement_started',
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: req.id } },
          body: { provider: 'codex' },
        }),
      409,
      'requirement_started',
    );
    // Model and effort apply to the next run; the same title is not a change.
    const edited = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { reasoningEffort: 'low', title: 'Ran once' },
    });
    expect(edited.status).toBe(200);
    expect(edited.data).toMatchObject({ reasoningEffort: 'low', status: 'waiting_confirmation', title: 'Ran once' });
    // A Start with a message of its own is fine.
    world.stub.scriptFor(req.id, [{ text: 'Done twice.' }]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: `Again ${req.id}` },
        })
      ).status,
    ).toBe(202);
    await until('second run', async () => {
      const runs = (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: req.id } } })))
        .items;
      return runs.length === 2 && runs.every((r) => r.status === 'succeeded');
    });
    await waiting(req.id);
  });

  it('reports usage per run, per Requirement and for the workspace since a time, with the cost Claude Code reports', async () => {
    const runs = (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: ran.id } } }))).items;
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      expect(run.inputTokens).toBeGreaterThan(0);
      expect(run.costUsd).toEqual(expect.any(Number));
      expect(run.costUsd).toBeGreaterThanOrEqual(0);
    }
    // Claude Code's total_cost_usd is cumulative over a resumed session: the second run records only its own share.
    // (The stub answers both runs with the same usage, so both cost the same.)
    expect(runs[0].costUsd).toBeGreaterThan(0);
    expect(runs[0].costUsd).toBeCloseTo(runs[1].costUsd!, 9);
    const mine = await ok(world.manager.api.GET('/api/usage', { params: { query: { requirementId: ran.id } } }));
    expect(mine).toMatchObject({ costReportedRuns: 2, runs: 2 });
    expect(mine.inputTokens).toBe(runs[0].inputTokens! + runs[1].inputTokens!);
    expect(mine.outputTokens).toBe(runs[0].outputTokens! + runs[1].outputTokens!);
    expect(mine.costUsd).toBeCloseTo(runs[0].costUsd! + runs[1].costUsd!, 9);
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    const today = await ok(
      world.manager.api.GET('/api/usage', { params: { query: { since: midnight.toISOString() } } }),
    );
    expect(today.runs).toBeGreaterThanOrEqual(2);
    expect(today.inputTokens).toBeGreaterThanOrEqual(mine.inputTokens);
    const future = await ok(
      world.manager.api.GET('/api/usage', {
        params: { query: { since: new Date(Date.now() + 3_600_000).toISOString() } },
      }),
    );
    expect(future).toEqual({
      cachedInputTokens: 0,
      costReportedRuns: 0,
      costUsd: null,
      inputTokens: 0,
      outputTokens: 0,
      runs: 0,
    });
    const bad = await world.manager.api.GET('/api/usage', { params: { query: { since: 'yesterday' } } });
    expect(bad.status).toBe(400);
  });

  it('forks any Requirement into a new todo one linked to it', async () => {
    const fork = await world.manager.api.POST('/api/requirements/{id}/fork', {
      params: { path: { id: ran.id } },
      body: {},
    });
    expect(fork.status).toBe(201);
    expect(fork.data).toMatchObject({
      createdBy: 'human',
      description: ran.description,
      forkedFromRequirementId: ran.id,
      parentRequirementId: null,
      provider: 'claude-code',
      reasoningEffort: 'low',
      session: { pendingMessageCount: 0, state: 'idle' },
      status: 'todo',
      title: 'Ran once',
    });
    expect(fork.data!.id).not.toBe(ran.id);
    const renamed = await world.manager.api.POST('/api/requirements/{id}/fork', {
      params: { path: { id: ran.id } },
      body: { provider: 'codex', title: 'Ran once, with Codex' },
    });
    expect(renamed.data).toMatchObject({
      forkedFromRequirementId: ran.id,
      provider: 'codex',
      title: 'Ran once, with Codex',
    });
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.POST('/api/requirements/{id}/fork', {
          params: { path: { id: ran.id } },
          body: { title: '' },
        }),
      400,
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.POST('/api/requirements/{id}/fork', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
          body: {},
        }),
      404,
    );
  });

  it('cancels a started Requirement: its run stopped, its timers ended, a requirement.cancelled event; then refuses', async () => {
    const req = await create('Cancel me');
    await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { provider: 'claude-code' },
    });
    world.stub.scriptFor(req.id, [{ shell: LONG_JOB }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `Work ${req.id}` },
    });
    const timer = await world.manager.api.POST('/api/requirements/{id}/timers', {
      params: { path: { id: req.id } },
      body: { description: 'Check later', intervalSeconds: 3600, schedule: 'once' },
    });
    expect(timer.status).toBe(201);
    await until(
      'the tool job running',
      async () => {
        const trace = (
          await ok(world.manager.api.GET('/api/requirements/{id}/trace', { params: { path: { id: req.id } } }))
        ).items;
        return trace.some((t) => t.kind === 'tool_call' && t.title.includes('am-edits-sleeper'));
      },
      90_000,
    );

    const cancelled = await world.manager.api.POST('/api/requirements/{id}/cancel', {
      params: { path: { id: req.id } },
    });
    expect(cancelled.status).toBe(200);
    // The answer comes once the run is recorded: stopped, not left running.
    expect(cancelled.data).toMatchObject({ session: { state: 'completed' }, status: 'cancelled' });
    const [run] = (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: req.id } } })))
      .items;
    expect(run).toMatchObject({ status: 'cancelled' });
    expect(
      (await ok(world.manager.api.GET('/api/requirements/{id}/timers', { params: { path: { id: req.id } } }))).items[0],
    ).toMatchObject({ status: 'cancelled' });

    await expectRefused(
      dataDirectory(),
      () => world.manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: req.id } } }),
      409,
      'requirement_closed',
    );
    await expectRefused(
      dataDirectory(),
      () => world.manager.api.POST('/api/requirements/{id}/start', { params: { path: { id: req.id } }, body: {} }),
      409,
      'requirement_closed',
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.PATCH('/api/requirements/{id}', { params: { path: { id: req.id } }, body: { model: 'x' } }),
      409,
      'requirement_closed',
    );
    await expectRefused(
      dataDirectory(),
      () =>
        world.manager.api.POST('/api/requirements/{id}/cancel', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
        }),
      404,
    );
    // A done one is not cancelled either.
    await world.manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: ran.id } } });
    await expectRefused(
      dataDirectory(),
      () => world.manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: ran.id } } }),
      409,
      'requirement_closed',
    );
    expect(await eventTypes(req.id)).toContain('requirement.cancelled');
  });

  it('cancels a todo one too (nothing to stop), with its event', async () => {
    const req = await create('Never started');
    const res = await world.manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: req.id } } });
    expect(res.data).toMatchObject({ session: { state: 'completed' }, status: 'cancelled' });
    expect(await eventTypes(req.id)).toEqual(['requirement.created', 'requirement.cancelled']);
  });
});
