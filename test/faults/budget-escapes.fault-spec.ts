import { agentApiCall, proposeOverHttp } from '../support/agent-shell';
import { type Json } from '../support/http';
import { REAL_AGENT_CLIS } from '../support/model-stub';
import { type RealAgentWorld, useRealAgentWorld } from '../support/real-agent-world';
import { until } from '../support/wait';
import { ok } from '../support/api';
import { checkInvariants } from './invariants';

const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;

jest.setTimeout(10 * 60_000);

/**
 * The budget attack suite (issue 25 §4): an agent (the real Claude Code CLI, driven by the model
 * stub) tries every agent-reachable route out of its budget, and none works. Its proposals over
 * raw HTTP with its run credential, code-factory-cli and the MCP tool ask for no budget or for
 * 2,000,000,000 tokens and get at most what its tree has left; a child that spent its own budget is
 * not reopened by marking it done and messaging it; once its tree's budget is spent, no child of it
 * starts (by action, over HTTP or the CLI) or wakes (a related message), and no proposal is
 * written. A person raising the budget lets the held work go on. The store's invariants hold,
 * the tree usage one included.
 */
describe('an agent trying to escape its budget', () => {
  let world: RealAgentWorld;
  useRealAgentWorld(CLAUDE, 'budget-escapes', (w) => (world = w));

  const get = async (id: string): Promise<Json> =>
    await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const runsOf = async (id: string): Promise<Json[]> =>
    (await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 100 } } }))).items;
  const childrenOf = async (id: string): Promise<Json[]> =>
    (await ok(world.manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.filter(
      (r) => r.parentRequirementId === id,
    );
  const finished = (id: string, count: number) =>
    until(
      `${count} finished run(s) of ${id}`,
      async () => {
        const runs = await runsOf(id);
        return runs.length === count && runs.every((run) => run.status !== 'running') ? runs : undefined;
      },
      120_000,
    );
  /** The transcript of the last model request of the parent's latest run: every tool result it got. */
  const lastTranscript = (marker: string) => world.stub.requests.filter((r) => r.marker === marker).pop()!.transcript;

  it('gets nowhere by any route, and a person raising the budget lets the held work go on', async () => {
    const parent = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 1500 }, provider: 'claude-code', title: 'Attacker' },
      }),
    );
    const tag = parent.id;

    // 1. Proposals asking for no budget, or for far more than there is.
    world.stub.scriptFor(tag, [
      {
        shell: proposeOverHttp({
          budget: null,
          description: `Child A ${tag}-A`,
          start: true,
          title: 'A: raw HTTP, budget null, started',
        }),
      },
      {
        shell: `code-factory-cli requirement propose --title "B: CLI, 2e9 tokens" --description "Child B ${tag}-B" --budget-tokens 2000000000`,
      },
      {
        arguments: {
          budget: { maxTokens: 2_000_000_000 },
          description: `Child C ${tag}-C`,
          title: 'C: MCP, 2e9 tokens',
        },
        tool: 'propose_requirement',
      },
      {
        shell: `code-factory-cli requirement propose --title "E: spends its 50" --description "Child E ${tag}-E" --budget-tokens 50 --start`,
      },
      { text: 'Proposed four.' },
    ]);
    world.stub.scriptFor(`${tag}-A`, [{ text: 'A done.' }]);
    world.stub.scriptFor(`${tag}-E`, [{ text: 'E done.' }, { text: 'E must not run again.' }]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Spawn work ${tag}` },
    });
    await finished(parent.id, 1);
    const proposals = lastTranscript(tag);
    expect(proposals.match(/budget_clamped/g)).toHaveLength(3);
    const children = new Map((await childrenOf(parent.id)).map((child) => [child.title.slice(0, 1), child]));
    expect([...children.keys()].sort()).toEqual(['A', 'B', 'C', 'E']);
    for (const key of ['A', 'B', 'C']) {
      expect({ key, budget: children.get(key).budget }).toEqual({
        budget: { maxCostUsd: null, maxTokens: expect.any(Number) },
        key,
      });
      expect(children.get(key).budget.maxTokens).toBeLessThanOrEqual(1500);
    }
    const e = children.get('E');
    expect(e.budget).toEqual({ maxCostUsd: null, maxTokens: 50 });
    await finished(children.get('A').id, 1);
    await finished(e.id, 1);
    await until('E paused on its budget', async () => ((await get(e.id)).budgetReachedAt !== null ? true : undefined));

    // 2. Mark the spent child done (allowed: done work waits for nobody), then message it to reopen it.
    world.stub.scriptFor(tag, [
      { shell: `code-factory-cli requirement action --requirement-id ${e.id} --done; echo "exit=$?"` },
      {
        shell: `code-factory-cli requirement message --requirement-id ${e.id} --message "Reopen ${tag}-E"; echo "exit=$?"`,
      },
      { text: 'Reopened?' },
    ]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Reopen E ${tag}` },
    });
    await finished(parent.id, 2);
    expect(lastTranscript(tag)).toContain('"queued": true');
    expect(await runsOf(e.id)).toHaveLength(1);
    expect(await get(e.id)).toMatchObject({ session: { pendingMessageCount: 1 }, status: 'done' });

    // 3. A person lowers the budget under what the tree spent, then starts the parent (its run is
    //    theirs to finish); its agent tries to start children, propose more, and wake one.
    const lowered = await world.manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: parent.id } },
      body: { budget: { maxTokens: 100 } },
    });
    expect(lowered.data!.budgetReachedAt).not.toBeNull();
    const b = children.get('B');
    const c = children.get('C');
    world.stub.scriptFor(`${tag}-B`, [{ text: 'B ran once the budget was raised.' }]);
    world.stub.scriptFor(tag, [
      { shell: `code-factory-cli requirement action --requirement-id ${b.id} --start; echo "exit=$?"` },
      {
        shell: agentApiCall(`/agent/requirements/${c.id}/action`, { action: 'start', sourceRequirementId: parent.id }),
      },
      {
        shell: proposeOverHttp({ budget: { maxTokens: 10 }, description: 'More', start: false, title: 'F: more work' }),
      },
      {
        arguments: { budget: { maxTokens: 10 }, description: 'More', title: 'G: more work' },
        tool: 'propose_requirement',
      },
      { arguments: { message: `Get going ${tag}-B`, requirementId: b.id }, tool: 'message_related' },
      { text: 'Tried.' },
    ]);
    await world.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: parent.id } },
      body: { message: `Push on ${tag}` },
    });
    await finished(parent.id, 3);
    const attempts = lastTranscript(tag);
    expect(attempts.match(/budget_reached/g)?.length).toBeGreaterThanOrEqual(4);
    expect(attempts).toContain('status=409');
    expect((await childrenOf(parent.id)).map((child) => child.title.slice(0, 1)).sort()).toEqual(['A', 'B', 'C', 'E']);
    expect(await runsOf(b.id)).toEqual([]);
    expect(await runsOf(c.id)).toEqual([]);
    const heldB = await get(b.id);
    expect(heldB.budgetReachedAt).not.toBeNull();
    expect(heldB.session.pendingMessageCount).toBe(1);

    // 4. A person raises the budget: the held message runs; nothing else moves.
    expect(
      (
        await world.manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: parent.id } },
          body: { budget: { maxTokens: 1_000_000 } },
        })
      ).status,
    ).toBe(200);
    expect((await finished(b.id, 1))[0].status).toBe('succeeded');
    expect(await runsOf(c.id)).toEqual([]);
    expect(await runsOf(e.id)).toHaveLength(1);
    expect(await checkInvariants(world.manager.dataDirectory())).toEqual([]);
    const tree = await get(parent.id);
    const spent = (r: Json) => r.treeUsage.inputTokens + r.treeUsage.outputTokens;
    const below = await Promise.all([...children.values()].map((child) => get(child.id)));
    expect(spent(tree)).toBe(
      tree.usage.inputTokens + tree.usage.outputTokens + below.reduce((sum, child) => sum + spent(child), 0),
    );
  });
});
