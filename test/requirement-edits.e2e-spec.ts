import * as path from 'node:path';

import { query } from './support/db-snapshot';
import { send } from './support/http';
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

interface Requirement {
  id: string;
  title: string;
  description: string;
  status: string;
  provider: string;
  model: string | null;
  reasoningEffort: string | null;
  forkedFromRequirementId: string | null;
  session: { id: string; state: string; provider: string; pendingMessageCount: number };
}

describe('editing, forking and cancelling Requirements (real Claude Code)', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CLAUDE, 'edits', (w) => (world = w));

  const origin = () => world.manager.origin;
  const dataDirectory = () => world.manager.dataDirectory();
  const get = async (id: string): Promise<Requirement> => (await send(origin(), 'GET', `/api/requirements/${id}`)).json;
  const create = async (title: string): Promise<Requirement> =>
    (await send(origin(), 'POST', '/api/requirements', { description: 'Report the durations.', provider: 'codex', title })).json;
  /** The event types written for a Requirement, in order (from the store: the SSE stream's source). */
  const eventTypes = async (id: string) =>
    (await query<{ type: string }>(path.join(dataDirectory(), 'factory.sqlite'), 'SELECT type FROM manager_event WHERE requirement_id = ? ORDER BY id', [id])).map((e) => e.type);
  const waiting = (id: string) => until(`${id} waiting`, async () => ((await get(id)).status === 'waiting_confirmation' ? get(id) : undefined), 90_000);

  it('PATCH edits a todo Requirement (provider included, its session follows) with a requirement.updated event', async () => {
    const req = await create('Draft title');
    const res = await send(origin(), 'PATCH', `/api/requirements/${req.id}`, {
      description: 'Now with **flush** timings.',
      model: 'claude-sonnet-4-5',
      provider: 'claude-code',
      reasoningEffort: 'high',
      title: 'Final title',
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
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
    const found = async (q: string) => ((await send(origin(), 'GET', `/api/search?q=${q}`)).json.items as Array<{ requirementId: string }>).some((i) => i.requirementId === req.id);
    await expect(found('flush')).resolves.toBe(true);
    await expect(found('Draft')).resolves.toBe(false);
    // Clearing the model goes back to the provider's default.
    expect((await send(origin(), 'PATCH', `/api/requirements/${req.id}`, { model: null })).json.model).toBeNull();
    expect(await eventTypes(req.id)).toEqual(['requirement.created', 'requirement.updated', 'requirement.updated']);
  });

  it('refuses bad edits with a clear 4xx and writes nothing', async () => {
    const req = await create('Refusals');
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, {}), 400, 'nothing_to_update');
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { title: 'x'.repeat(201) }), 400);
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { title: '   ' }), 400);
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { provider: 'gpt' }), 400);
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { status: 'done' }), 400);
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', '/api/requirements/req_00000000-0000-0000-0000-000000000000', { title: 'y' }), 404);
    expect((await get(req.id)).title).toBe('Refusals');
  });

  let ran: Requirement;

  it('runs, then refuses a Start with nothing new (no duplicate answer), and a title edit after the start', async () => {
    const req = await create('Ran once');
    await send(origin(), 'PATCH', `/api/requirements/${req.id}`, { provider: 'claude-code' });
    world.stub.scriptFor(req.id, [{ text: 'Done once.' }]);
    expect((await send(origin(), 'POST', `/api/requirements/${req.id}/start`, { message: `Go ${req.id}` })).status).toBe(202);
    ran = await waiting(req.id);
    expect(ran.session.pendingMessageCount).toBe(0);

    await expectRefused(dataDirectory(), () => send(origin(), 'POST', `/api/requirements/${req.id}/start`, {}), 409, 'nothing_to_deliver');
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { title: 'Renamed' }), 409, 'requirement_started');
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { provider: 'codex' }), 409, 'requirement_started');
    // Model and effort apply to the next run; the same title is not a change.
    const edited = await send(origin(), 'PATCH', `/api/requirements/${req.id}`, { reasoningEffort: 'low', title: 'Ran once' });
    expect(edited.status).toBe(200);
    expect(edited.json).toMatchObject({ reasoningEffort: 'low', status: 'waiting_confirmation', title: 'Ran once' });
    // A Start with a message of its own is fine.
    world.stub.scriptFor(req.id, [{ text: 'Done twice.' }]);
    expect((await send(origin(), 'POST', `/api/requirements/${req.id}/start`, { message: `Again ${req.id}` })).status).toBe(202);
    await until('second run', async () => {
      const runs = (await send(origin(), 'GET', `/api/runs?requirementId=${req.id}`)).json.items as Array<{ status: string }>;
      return runs.length === 2 && runs.every((r) => r.status === 'succeeded');
    });
    await waiting(req.id);
  });

  it('reports usage per run, per Requirement and for the workspace since a time, with the cost Claude Code reports', async () => {
    const runs = (await send(origin(), 'GET', `/api/runs?requirementId=${ran.id}`)).json.items as Array<{ inputTokens: number; outputTokens: number; costUsd: number | null }>;
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
    const mine = (await send(origin(), 'GET', `/api/usage?requirementId=${ran.id}`)).json;
    expect(mine).toMatchObject({ costReportedRuns: 2, runs: 2 });
    expect(mine.inputTokens).toBe(runs[0].inputTokens + runs[1].inputTokens);
    expect(mine.outputTokens).toBe(runs[0].outputTokens + runs[1].outputTokens);
    expect(mine.costUsd).toBeCloseTo(runs[0].costUsd! + runs[1].costUsd!, 9);
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    const today = (await send(origin(), 'GET', `/api/usage?since=${encodeURIComponent(midnight.toISOString())}`)).json;
    expect(today.runs).toBeGreaterThanOrEqual(2);
    expect(today.inputTokens).toBeGreaterThanOrEqual(mine.inputTokens);
    const future = (await send(origin(), 'GET', `/api/usage?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`)).json;
    expect(future).toEqual({ cachedInputTokens: 0, costReportedRuns: 0, costUsd: null, inputTokens: 0, outputTokens: 0, runs: 0 });
    const bad = await send(origin(), 'GET', '/api/usage?since=yesterday');
    expect(bad.status).toBe(400);
  });

  it('forks any Requirement into a new todo one linked to it', async () => {
    const fork = await send(origin(), 'POST', `/api/requirements/${ran.id}/fork`, {});
    expect(fork.status).toBe(201);
    expect(fork.json).toMatchObject({
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
    expect(fork.json.id).not.toBe(ran.id);
    const renamed = await send(origin(), 'POST', `/api/requirements/${ran.id}/fork`, { provider: 'codex', title: 'Ran once, with Codex' });
    expect(renamed.json).toMatchObject({ forkedFromRequirementId: ran.id, provider: 'codex', title: 'Ran once, with Codex' });
    await expectRefused(dataDirectory(), () => send(origin(), 'POST', `/api/requirements/${ran.id}/fork`, { title: '' }), 400);
    await expectRefused(dataDirectory(), () => send(origin(), 'POST', '/api/requirements/req_00000000-0000-0000-0000-000000000000/fork', {}), 404);
  });

  it('cancels a started Requirement: its run stopped, its timers ended, a requirement.cancelled event; then refuses', async () => {
    const req = await create('Cancel me');
    await send(origin(), 'PATCH', `/api/requirements/${req.id}`, { provider: 'claude-code' });
    world.stub.scriptFor(req.id, [{ shell: LONG_JOB }]);
    await send(origin(), 'POST', `/api/requirements/${req.id}/start`, { message: `Work ${req.id}` });
    const timer = await send(origin(), 'POST', `/api/requirements/${req.id}/timers`, { description: 'Check later', intervalSeconds: 3600, schedule: 'once' });
    expect(timer.status).toBe(201);
    await until(
      'the tool job running',
      async () => {
        const trace = (await send(origin(), 'GET', `/api/requirements/${req.id}/trace`)).json.items as Array<{ kind: string; title: string }>;
        return trace.some((t) => t.kind === 'tool_call' && t.title.includes('am-edits-sleeper'));
      },
      90_000,
    );

    const cancelled = await send(origin(), 'POST', `/api/requirements/${req.id}/cancel`);
    expect(cancelled.status).toBe(200);
    // The answer comes once the run is recorded: stopped, not left running.
    expect(cancelled.json).toMatchObject({ session: { state: 'completed' }, status: 'cancelled' });
    const [run] = (await send(origin(), 'GET', `/api/runs?requirementId=${req.id}`)).json.items;
    expect(run).toMatchObject({ status: 'cancelled' });
    expect((await send(origin(), 'GET', `/api/requirements/${req.id}/timers`)).json.items[0]).toMatchObject({ status: 'cancelled' });

    await expectRefused(dataDirectory(), () => send(origin(), 'POST', `/api/requirements/${req.id}/cancel`), 409, 'requirement_closed');
    await expectRefused(dataDirectory(), () => send(origin(), 'POST', `/api/requirements/${req.id}/start`, {}), 409, 'requirement_closed');
    await expectRefused(dataDirectory(), () => send(origin(), 'PATCH', `/api/requirements/${req.id}`, { model: 'x' }), 409, 'requirement_closed');
    await expectRefused(dataDirectory(), () => send(origin(), 'POST', '/api/requirements/req_00000000-0000-0000-0000-000000000000/cancel'), 404);
    // A done one is not cancelled either.
    await send(origin(), 'POST', `/api/requirements/${ran.id}/confirm`);
    await expectRefused(dataDirectory(), () => send(origin(), 'POST', `/api/requirements/${ran.id}/cancel`), 409, 'requirement_closed');
    expect(await eventTypes(req.id)).toContain('requirement.cancelled');
  });

  it('cancels a todo one too (nothing to stop), with its event', async () => {
    const req = await create('Never started');
    const res = await send(origin(), 'POST', `/api/requirements/${req.id}/cancel`);
    expect(res.json).toMatchObject({ session: { state: 'completed' }, status: 'cancelled' });
    expect(await eventTypes(req.id)).toEqual(['requirement.created', 'requirement.cancelled']);
  });
});
