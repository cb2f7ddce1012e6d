import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { proposeOverHttp } from './support/agent-shell';
import { ok } from './support/api';
import { query } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { REAL_AGENT_CLIS } from './support/model-stub';
import { type RealAgentWorld, useRealAgentWorld } from './support/real-agent-world';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

// Issue 18 §1, budgets, end to end with the real Claude Code CLI driven by the model stub: each
// model response reports its usage in the stream (100 input + 1 output tokens as the stub
// answers), so a budget is crossed in the middle of a run. The crossing stops the run as a pause,
// a timer firing meanwhile wakes nothing, and raising the budget resumes the pending input.

const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;
const CODEX = REAL_AGENT_CLIS.find((cli) => cli.provider === 'codex')!;
/** A tool job that never ends by itself: the run it is in can only end by being stopped. */
const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-budget-sleeper`;

jest.setTimeout(240_000);

// The API's own types: a test that assumed another shape fails to compile.
type Requirement = Schemas['RequirementResponseDto'];
type Run = Schemas['AgentRunResponseDto'];
type Message = Schemas['MessageResponseDto'];

describe('budgets (real Claude Code, usage reported mid-run)', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CLAUDE, 'budgets', (w) => (world = w));

  const dataDirectory = () => world.manager.dataDirectory();
  const get = async (id: string): Promise<Requirement> =>
    await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const runsOf = async (id: string): Promise<Run[]> =>
    (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items.reverse();
  const messagesOf = async (id: string): Promise<Message[]> =>
    (await ok(world.manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
  const eventTypes = async (id: string) =>
    (
      await query<{ type: string }>(
        path.join(dataDirectory(), 'factory.sqlite'),
        'SELECT type FROM manager_event WHERE requirement_id = ? ORDER BY id',
        [id],
      )
    ).map((e) => e.type);
  const tokens = (r: Requirement) => r.usage.inputTokens + r.usage.outputTokens;

  it('takes a budget on create, refuses bad ones with a 400, and fills in the configured default', async () => {
    const created = await world.manager.api.POST('/api/requirements', {
      body: { budget: { maxTokens: 10_000 }, provider: 'claude-code', title: 'Budgeted' },
    });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({
      budget: { maxCostUsd: null, maxTokens: 10_000 },
      budgetReachedAt: null,
      usage: { costUsd: null, inputTokens: 0, outputTokens: 0 },
    });
    for (const budget of [
      { maxTokens: 0 },
      { maxTokens: 1.5 },
      { maxCostUsd: -1 },
      { maxTokens: '100' },
      { tokens: 5 },
      [],
      'lots',
    ]) {
      // Malformed budgets on purpose: the typed client would not let them be written.
      await expectRefused(
        dataDirectory(),
        () =>
          sendUntyped(world.manager.origin, 'POST', '/api/requirements', {
            budget,
            provider: 'codex',
            title: 'Bad budget',
          }),
        400,
      );
      await expectRefused(
        dataDirectory(),
        () => sendUntyped(world.manager.origin, 'PATCH', `/api/requirements/${created.data!.id}`, { budget }),
        400,
      );
    }
    expect((await get(created.data!.id)).budget).toEqual({ maxCostUsd: null, maxTokens: 10_000 });
    // A proposal (here with the owner's token, as the MCP tool and the CLI send it) takes one too.
    const parent = created.data!;
    const proposed = await world.manager.api.POST('/api/agent/requirements', {
      body: {
        budget: { maxCostUsd: 0.1 },
        description: 'A follow-up',
        parentRequirementId: parent.id,
        sourceSessionId: parent.session.id,
        title: 'Proposed with a budget',
      },
    });
    expect(proposed.status).toBe(201);
    expect(proposed.data).toMatchObject({ budget: { maxCostUsd: 0.1, maxTokens: null }, createdBy: 'rd_agent' });
    // Read back as typed on both stores (dollars are double precision, not PostgreSQL's 4-byte real).
    expect((await get(proposed.data!.id)).budget).toEqual({ maxCostUsd: 0.1, maxTokens: null });

    const configured = await world.manager.api.PATCH('/api/configuration', {
      body: { defaultBudgetMaxCostUsd: 2.5, defaultBudgetMaxTokens: 50_000 },
    });
    expect(configured.status).toBe(200);
    await expectRefused(
      dataDirectory(),
      () => world.manager.api.PATCH('/api/configuration', { body: { defaultBudgetMaxTokens: -5 } }),
      400,
    );
    const defaulted = await ok(
      world.manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'Default budget' } }),
    );
    expect(defaulted.budget).toEqual({ maxCostUsd: 2.5, maxTokens: 50_000 });
    // An explicit null is "no budget", whatever the default.
    expect(
      (
        await ok(
          world.manager.api.POST('/api/requirements', {
            body: { budget: null, provider: 'codex', title: 'Unlimited' },
          }),
        )
      ).budget,
    ).toBeNull();
    await world.manager.api.PATCH('/api/configuration', {
      body: { defaultBudgetMaxCostUsd: null, defaultBudgetMaxTokens: null },
    });
    expect(
      (await ok(world.manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'No default' } })))
        .budget,
    ).toBeNull();
  });

  it('pauses a run that crosses its budget, stays paused through a reply, and resumes when the budget is raised', async () => {
    const req = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 250 }, provider: 'claude-code', title: 'Spend carefully' },
      }),
    );
    // Three model responses of 101 tokens each: the third takes the Requirement to 303 of 250
    // while its tool job (which never ends) runs; a fourth response would mean it was not stopped.
    world.stub.scriptFor(req.id, [
      { shell: 'echo one' },
      { shell: 'echo two' },
      { shell: LONG_JOB },
      { text: 'Should never be asked for.' },
    ]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: `Do the work ${req.id}` },
        })
      ).status,
    ).toBe(202);

    const paused = await until(
      'the budget pause',
      async () => {
        const r = await get(req.id);
        return r.budgetReachedAt !== null && r.status === 'waiting_confirmation' ? r : undefined;
      },
      120_000,
    );
    expect(paused.session).toMatchObject({ pendingMessageCount: 1, state: 'waiting_human' });
    expect(paused.session.pausedAt).not.toBeNull();
    expect(tokens(paused)).toBeGreaterThanOrEqual(250);
    const [stopped] = await runsOf(req.id);
    // Stopped like a person's stop: cancelled, its input not consumed, its usage recorded.
    expect(stopped.status).toBe('cancelled');
    expect((stopped.inputTokens ?? 0) + (stopped.outputTokens ?? 0)).toBe(tokens(paused));
    expect(world.stub.requests.filter((r) => r.marker === req.id)).toHaveLength(3);
    const notice = (await messagesOf(req.id)).filter(
      (m) => m.author === 'system' && m.body.startsWith('Budget reached'),
    );
    expect(notice).toHaveLength(1);
    expect(notice[0].body).toContain(`Budget reached: ${tokens(paused).toLocaleString('en-US')} of 250 tokens.`);
    expect(notice[0].deliverToRd).toBe(false);
    // The events say what was spent: the run's end carries the Requirement with its usage and the pause.
    const [cancelledEvent] = await query<{ payload: string }>(
      path.join(dataDirectory(), 'factory.sqlite'),
      "SELECT payload FROM manager_event WHERE requirement_id = ? AND type = 'run.cancelled'",
      [req.id],
    );
    expect(JSON.parse(cancelledEvent.payload).requirement).toMatchObject({
      budget: { maxTokens: 250 },
      budgetReachedAt: paused.budgetReachedAt,
      usage: paused.usage,
    });

    // A person's reply waits: only raising the budget or a start lifts a budget pause. (A timer
    // or a trigger firing meanwhile waits the same way: test/integration/budgets.int-spec.ts and
    // timers.int-spec.ts, with a clock that does not take a minute.)
    const reply = await world.manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: `Also this ${req.id}` },
    });
    expect(reply.data).toMatchObject({
      queued: true,
      requirement: { budgetReachedAt: paused.budgetReachedAt, session: { state: 'waiting_human' } },
    });
    expect(await runsOf(req.id)).toHaveLength(1);
    expect((await eventTypes(req.id)).filter((t) => t === 'run.started')).toHaveLength(1);
    expect((await get(req.id)).session.pendingMessageCount).toBe(2);

    // Lowering it further changes nothing; raising it resumes with every pending message.
    expect(
      await ok(
        world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: req.id } },
          body: { budget: { maxTokens: 200 } },
        }),
      ),
    ).toMatchObject({
      budgetReachedAt: paused.budgetReachedAt,
      session: { state: 'waiting_human' },
    });
    world.stub.scriptFor(req.id, [{ text: 'Resumed and finished.' }]);
    const raised = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { budget: { maxTokens: 100_000 } },
    });
    expect(raised.status).toBe(200);
    expect(raised.data).toMatchObject({
      budget: { maxCostUsd: null, maxTokens: 100_000 },
      budgetReachedAt: null,
      session: { pausedAt: null, state: 'running' },
      status: 'doing',
    });
    const done = await until(
      'the resumed run',
      async () => {
        const runs = await runsOf(req.id);
        return runs.length === 2 && runs[1].status === 'succeeded' ? runs : undefined;
      },
      120_000,
    );
    const messages = await messagesOf(req.id);
    const first = messages.find((m) => m.body === `Do the work ${req.id}`)!;
    const last = messages.find((m) => m.body === `Also this ${req.id}`)!;
    // The stopped run's input and the reply: one run took them both.
    expect(done[1]).toMatchObject({ inputFromSequence: first.sequence, inputToSequence: last.sequence });
    const after = await until('waiting again', async () =>
      (await get(req.id)).status === 'waiting_confirmation' ? get(req.id) : undefined,
    );
    expect(after).toMatchObject({ budgetReachedAt: null, session: { pausedAt: null, pendingMessageCount: 0 } });
    expect(tokens(after)).toBeGreaterThan(tokens(paused));
  });

  it('pauses an idle Requirement whose budget is lowered under what it spent; an explicit start runs it once past the budget', async () => {
    const req = await ok(
      world.manager.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'Lowered later' } }),
    );
    world.stub.scriptFor(req.id, [{ text: 'First answer.' }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `Begin ${req.id}` },
    });
    const ran = await until(
      'the first run',
      async () => {
        const r = await get(req.id);
        return r.status === 'waiting_confirmation' ? r : undefined;
      },
      120_000,
    );
    expect(ran.budgetReachedAt).toBeNull();
    expect(tokens(ran)).toBeGreaterThan(0);

    const lowered = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { budget: { maxTokens: 1 } },
    });
    expect(lowered.data!.budgetReachedAt).not.toBeNull();
    expect(lowered.data!.session.pausedAt).not.toBeNull();
    expect(
      (await messagesOf(req.id)).filter((m) =>
        m.body.startsWith(
          `Budget reached: ${tokens(ran).toLocaleString('en-US')} of 1 tokens, $${ran.usage.costUsd!.toFixed(4)}.`,
        ),
      ),
    ).toHaveLength(1);

    // A person's start is theirs: the run is not stopped at its first report, and pauses again when it ends.
    world.stub.scriptFor(req.id, [{ shell: 'echo past' }, { text: 'Second answer.' }]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: `Go on ${req.id}` },
        })
      ).status,
    ).toBe(202);
    const runs = await until(
      'the started run',
      async () => {
        const all = await runsOf(req.id);
        return all.length === 2 && all[1].status !== 'running' ? all : undefined;
      },
      120_000,
    );
    expect(runs[1].status).toBe('succeeded');
    const again = await get(req.id);
    expect(again).toMatchObject({
      session: { pendingMessageCount: 0, state: 'waiting_human' },
      status: 'waiting_confirmation',
    });
    expect(again.budgetReachedAt).not.toBeNull();
    expect((await messagesOf(req.id)).filter((m) => m.body.startsWith('Budget reached'))).toHaveLength(2);
    // Removing the budget lifts the pause; with nothing pending no run starts.
    const lifted = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: req.id } },
      body: { budget: null },
    });
    expect(lifted.data).toMatchObject({
      budget: null,
      budgetReachedAt: null,
      session: { pausedAt: null, state: 'waiting_human' },
    });
    expect(await runsOf(req.id)).toHaveLength(2);
  });
  it("refuses the proposing agent's start of a child whose budget is reached: only a person lifts it", async () => {
    const parent = await ok(
      world.manager.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'Parent' } }),
    );
    const child = await ok(
      world.manager.api.POST('/api/agent/requirements', {
        body: {
          budget: { maxTokens: 1 },
          description: 'Spends its budget at once',
          parentRequirementId: parent.id,
          sourceSessionId: parent.session.id,
          title: `Child of ${parent.id}`,
        },
      }),
    );
    world.stub.scriptFor(child.id, [{ text: 'Child answer.' }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: child.id } },
      body: { message: `Child work ${child.id}` },
    });
    await until(
      'the child paused by its budget',
      async () => {
        const r = await get(child.id);
        return r.budgetReachedAt !== null && r.status === 'waiting_confirmation';
      },
      120_000,
    );

    // The parent's agent asks to start it through code-factory-cli, with its own run credential.
    world.stub.scriptFor(parent.id, [
      { shell: `code-factory-cli requirement action --requirement-id ${child.id} --start; echo "exit=$?"` },
      { text: 'Tried.' },
    ]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Parent work ${parent.id}` },
    });
    await until(
      'the parent run',
      async () => ((await runsOf(parent.id))[0]?.status === 'succeeded' ? true : undefined),
      120_000,
    );
    const answered = world.stub.requests.filter((r) => r.marker === parent.id).pop()!;
    expect(answered.transcript).toContain(`Requirement ${child.id} reached its budget`);
    expect(answered.transcript).toContain('exit=1');
    expect(await runsOf(child.id)).toHaveLength(1);
    expect((await get(child.id)).budgetReachedAt).not.toBeNull();
  });
});

// Issue 25 §4: a budget covers the whole tree of work an agent spawns. The agent is the real
// Claude Code CLI; it proposes through raw HTTP with its run credential, code-factory-cli and the
// MCP tool, and its children's runs report 101 tokens a response as its own do.
describe('budgets across the tree an agent spawns (real Claude Code)', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CLAUDE, 'budget-tree', (w) => (world = w));

  const get = async (id: string): Promise<Requirement> =>
    await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const runsOf = async (id: string): Promise<Run[]> =>
    (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items.reverse();
  const messagesOf = async (id: string): Promise<Message[]> =>
    (await ok(world.manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
  const childrenOf = async (id: string): Promise<Requirement[]> =>
    (await ok(world.manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.filter(
      (r) => r.parentRequirementId === id,
    );
  const tokens = (u: Requirement['usage']) => u.inputTokens + u.outputTokens;
  const settled = (id: string, runs: number) =>
    until(
      `${runs} finished run(s) of ${id}`,
      async () => {
        const all = await runsOf(id);
        return all.length === runs && all.every((run) => run.status !== 'running') ? all : undefined;
      },
      120_000,
    );

  it('refuses every proposal of an agent whose tree sits at its budget, over HTTP, code-factory-cli and the MCP tool, writing nothing', async () => {
    const parent = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 20 }, provider: 'claude-code', title: 'Capped at 20' },
      }),
    );
    // One answer (101 tokens) spends the 20: the Requirement sits at its budget.
    world.stub.scriptFor(parent.id, [{ text: 'First answer.' }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Begin ${parent.id}` },
    });
    await until(
      'the budget reached',
      async () => ((await get(parent.id)).budgetReachedAt !== null ? true : undefined),
      120_000,
    );

    // A person's start runs it past the budget (theirs to finish); its agent tries to spawn uncapped work.
    world.stub.scriptFor(parent.id, [
      {
        shell: proposeOverHttp({
          budget: null,
          description: 'Uncapped over HTTP',
          start: true,
          title: 'Escape over HTTP',
        }),
      },
      {
        shell:
          'code-factory-cli requirement propose --title "Escape by CLI" --description "x" --budget-tokens 2000000000 --start; echo "exit=$?"',
      },
      {
        arguments: {
          budget: { maxTokens: 2_000_000_000 },
          description: 'Uncapped by MCP',
          start: true,
          title: 'Escape by MCP',
        },
        tool: 'propose_requirement',
      },
      { text: 'Tried all three.' },
    ]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: parent.id } },
          body: { message: `Go on ${parent.id}` },
        })
      ).status,
    ).toBe(202);
    const [, second] = await settled(parent.id, 2);
    expect(second.status).toBe('succeeded');
    const transcript = world.stub.requests.filter((r) => r.marker === parent.id).pop()!.transcript;
    expect(transcript).toContain('status=409');
    expect(transcript).toContain('propose refused (409 budget_reached)');
    expect(transcript).toContain('exit=1');
    expect(transcript.match(/budget_reached/g)?.length).toBeGreaterThanOrEqual(3);
    expect(await childrenOf(parent.id)).toEqual([]);
    // Its run ended past the budget again: paused, as a person's start past it does.
    expect((await get(parent.id)).budgetReachedAt).not.toBeNull();
  });

  it("counts a child's usage against its parent: the child's run that spends the parent's tree is stopped, both pause, nothing below wakes, and raising the parent's budget resumes them", async () => {
    const parent = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 600 }, provider: 'claude-code', title: 'Parent at 600' },
      }),
    );
    const childMarker = `CHILD-${parent.id}`;
    // The agent proposes a child over raw HTTP with its run credential: no budget, started at once.
    world.stub.scriptFor(parent.id, [
      {
        shell: proposeOverHttp({
          budget: null,
          description: `Do the part ${childMarker}`,
          start: true,
          title: 'Child without a budget',
        }),
      },
      { text: 'Proposed.' },
    ]);
    // The child's fourth response takes the parent's tree (240 of its own + 404) past 600, while its
    // tool job (which never ends) runs; a fifth response would mean it was not stopped.
    world.stub.scriptFor(childMarker, [
      { shell: 'echo one' },
      { shell: 'echo two' },
      { shell: 'echo three' },
      { shell: LONG_JOB },
      { text: 'Resumed and finished.' },
    ]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Split the work ${parent.id}` },
    });
    await settled(parent.id, 1);
    const own = tokens((await get(parent.id)).usage);
    const answer = world.stub.requests.filter((r) => r.marker === parent.id).pop()!.transcript;
    expect(answer).toContain('status=201');
    expect(answer).toContain('"warnings":["budget_clamped"]');
    const [child] = await childrenOf(parent.id);
    // At most what the parent had left when it proposed (600, less what its run had reported then).
    expect(child.budget?.maxTokens).toBeGreaterThan(404);
    expect(child.budget?.maxTokens).toBeLessThanOrEqual(600);

    const [stopped] = await settled(child.id, 1);
    expect(stopped.status).toBe('cancelled');
    expect(world.stub.requests.filter((r) => r.marker === childMarker)).toHaveLength(4);
    const heldChild = await get(child.id);
    expect(heldChild).toMatchObject({ session: { state: 'waiting_human' }, status: 'waiting_confirmation' });
    expect(heldChild.budgetReachedAt).not.toBeNull();
    expect(tokens(heldChild.usage)).toBe(404);
    // Its own budget is not what stopped it: the parent's tree's is, and the notice names it.
    const [notice, ...more] = (await messagesOf(child.id)).filter((m) => m.author === 'system').map((m) => m.body);
    expect(more).toEqual([]);
    expect(notice).toMatch(
      new RegExp(
        `^Budget reached: the tree of "Parent at 600" \\(${parent.id}\\) spent ${own + 404} of 600 tokens(, \\$[\\d.]+)?\\.\n`,
      ),
    );
    expect(notice).toMatch(
      /The run was stopped; its input was not consumed and waits for the next run. Nothing wakes this Requirement until a person raises that budget or starts it.$/,
    );
    // The parent shows its own usage and its tree's, and pauses too (its tree spent its budget).
    const heldParent = await until('the parent paused', async () => {
      const r = await get(parent.id);
      return r.budgetReachedAt !== null ? r : undefined;
    });
    expect({ own: tokens(heldParent.usage), tree: tokens(heldParent.treeUsage) }).toEqual({ own, tree: own + 404 });
    const parentNotices = (await messagesOf(parent.id)).filter((m) => m.author === 'system').map((m) => m.body);
    expect(parentNotices).toHaveLength(1);
    expect(parentNotices[0]).toMatch(
      new RegExp(
        `^Budget reached: ${own + 404} of 600 tokens(, \\$[\\d.]+)?, 404 of the tokens by the Requirements proposed below it\\.\n`,
      ),
    );

    // Nothing below a spent budget wakes: a message to a todo sibling is queued, the sibling held.
    const sibling = await ok(
      world.manager.api.POST('/api/agent/requirements', {
        body: {
          budget: { maxTokens: 100_000 },
          description: `A sibling ${parent.id}`,
          parentRequirementId: parent.id,
          sourceSessionId: heldParent.session.id,
          title: 'Sibling',
        },
      }),
    );
    world.stub.scriptFor(`A sibling ${parent.id}`, [{ text: 'Sibling done.' }]);
    const told = await world.manager.api.POST('/api/agent/requirements/{id}/related/{targetId}/messages', {
      params: { path: { id: parent.id, targetId: sibling.id } },
      body: {
        message: 'Start on it.',
        sourceSessionId: heldParent.session.id,
      },
    });
    expect(told.data).toMatchObject({ queued: true, requirement: { session: { state: 'idle' } } });
    expect(told.data!.requirement.budgetReachedAt).not.toBeNull();
    expect(await runsOf(sibling.id)).toEqual([]);

    // A person's reply to the child waits too: only a start or a raised budget lifts a budget pause.
    const reply = await world.manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: child.id } },
      body: { message: `Carry on ${childMarker}` },
    });
    expect(reply.data).toMatchObject({ queued: true, requirement: { session: { pendingMessageCount: 1 } } });
    expect(await runsOf(child.id)).toHaveLength(1);

    // A person raises the parent's budget: the child's and the sibling's pending messages run.
    const raised = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: parent.id } },
      body: { budget: { maxTokens: 100_000 } },
    });
    expect(raised.data).toMatchObject({ budgetReachedAt: null, session: { pausedAt: null } });
    const [, resumed] = await settled(child.id, 2);
    expect(resumed.status).toBe('succeeded');
    expect((await settled(sibling.id, 1))[0].status).toBe('succeeded');
    // From here on the child answers to its own budget, the room it was given when proposed.
    const finished = await get(child.id);
    expect(finished.session.pendingMessageCount).toBe(0);
    expect(finished.budgetReachedAt !== null).toBe(tokens(finished.treeUsage) >= finished.budget!.maxTokens!);
    const after = await get(parent.id);
    expect(tokens(after.treeUsage)).toBe(
      tokens(after.usage) + tokens((await get(child.id)).treeUsage) + tokens((await get(sibling.id)).treeUsage),
    );
  });
});

describe('budgets (real Codex, usage reported with the turn)', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CODEX, 'budgets', (w) => (world = w));

  it('sees the crossing when the turn completes: the run succeeds (its input consumed) and the Requirement pauses', async () => {
    const req = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 100 }, provider: 'codex', title: 'Codex on a budget' },
      }),
    );
    world.stub.scriptFor(req.id, [{ text: 'Codex answer.' }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `Work ${req.id}` },
    });
    const paused = await until(
      'the budget pause',
      async () => {
        const r = await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id: req.id } } }));
        return r.budgetReachedAt !== null && r.status === 'waiting_confirmation' ? r : undefined;
      },
      120_000,
    );
    expect(paused.session).toMatchObject({ pendingMessageCount: 0, state: 'waiting_human' });
    expect(paused.usage).toEqual({ costUsd: null, inputTokens: 100, outputTokens: 20 });
    expect(
      (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: req.id } } }))).items,
    ).toEqual([expect.objectContaining({ status: 'succeeded' })]);
    const messages = (
      await ok(world.manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: req.id } } }))
    ).items;
    expect(messages.filter((m) => m.author === 'system').map((m) => m.body)).toEqual([
      'Budget reached: 120 of 100 tokens.\nNothing wakes this Requirement until a person raises its budget or starts it.',
    ]);
  });
});
