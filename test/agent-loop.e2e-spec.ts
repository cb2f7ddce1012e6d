import { ok } from './support/api';
import type { ManagerProcess } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';
import { useRealAgentWorld } from './support/real-agent-world';

// The agent's side of the control plane for real: the pinned Codex and Claude Code CLIs, told
// by the model stub to run code-factory-cli from their PATH, exactly as a user's agent would.

const PROVIDERS = REAL_AGENT_CLIS;
/** The first child's ID, from `requirement related` (what an agent would read off its JSON). */
const FIRST_CHILD = `"$(code-factory-cli requirement related | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.parse(s).children[0].id))")"`;

jest.setTimeout(120_000);

describe.each(PROVIDERS)('the agent loop with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'loop', (world) => ({ manager, stub } = world));

  it('proposes and starts a child, registers a PR, sets a timer and messages the child through code-factory-cli', async () => {
    const parent = await ok(
      manager.api.POST('/api/requirements', {
        body: { description: 'Split the work.', provider, title: 'Parent work' },
      }),
    );
    stub.scriptFor(parent.id, [
      { shell: 'code-factory-cli requirement propose --title "Child work" --description "Do the lexer part" --start' },
      {
        shell:
          'code-factory-cli pr register --url https://github.com/org/repo/pull/42 --title "Split the parser" --base-branch main --head-branch split-parser --head-sha 0a1b2c3d --status open',
      },
      { shell: 'code-factory-cli timer register --description "Check the CI of PR 42" --after-seconds 60' },
      {
        shell: `code-factory-cli requirement message --requirement-id ${FIRST_CHILD} --message "Use contract version 2."`,
      },
      { text: 'Child proposed, PR registered, timer set, child told.' },
    ]);
    const events = await connectSse(`${manager.origin}/api/events`);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: parent.id } },
          body: { message: `Go ${parent.id}` },
        })
      ).status,
    ).toBe(202);

    const run = await until(
      'the parent run to finish',
      async () => {
        const [latest] = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: parent.id } } })))
          .items;
        return latest?.status !== 'running' && latest;
      },
      90_000,
      200,
    );
    expect(run).toMatchObject({
      status: 'succeeded',
      taskSummary: 'Child proposed, PR registered, timer set, child told.',
    });

    // Every tool call succeeded: each printed the server's JSON.
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    const results = trace.filter((t) => t.kind === 'tool_result');
    expect(results).toHaveLength(4);
    for (const result of results) {
      expect(result.detail ?? '').not.toContain('code-factory-cli:');
    }

    const [child] = (await ok(manager.api.GET('/api/requirements'))).items.filter(
      (r) => r.parentRequirementId === parent.id,
    );
    expect(child).toMatchObject({
      createdBy: 'rd_agent',
      provider,
      sourceSessionId: parent.session.id,
      title: 'Child work',
    });
    expect(['doing', 'waiting_confirmation']).toContain(child.status);

    const prs = (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId: parent.id } } })))
      .items;
    expect(prs).toEqual([
      expect.objectContaining({ headSha: '0a1b2c3d', number: 42, repository: 'org/repo', status: 'open' }),
    ]);

    const timers = (await ok(manager.api.GET('/api/requirements/{id}/timers', { params: { path: { id: parent.id } } })))
      .items;
    expect(timers).toEqual([
      expect.objectContaining({
        description: 'Check the CI of PR 42',
        intervalSeconds: 60,
        schedule: 'once',
        status: 'active',
      }),
    ]);

    const childConversation = (
      await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: child.id } } }))
    ).items;
    expect(childConversation).toContainEqual(
      expect.objectContaining({
        author: 'rd_agent',
        body: 'Use contract version 2.',
        deliverToRd: true,
        sourceRequirementId: parent.id,
      }),
    );

    // Published as they happened, each by the parent's run.
    const published = await until("the loop's events", async () => {
      const seen = events.events;
      const byAgent = (type: string, requirementId: string) =>
        seen.find(
          (e) =>
            e.event === type &&
            e.data.requirementId === requirementId &&
            (e.data.actor as { id: string }).id === run.id,
        );
      const wanted = [
        byAgent('requirement.created', child.id),
        byAgent('run.started', child.id),
        byAgent('pull_request.created', parent.id),
        byAgent('timer.created', parent.id),
        byAgent('message.created', child.id),
      ];
      return wanted.every(Boolean) && wanted;
    });
    expect([...published].sort((a, b) => a!.data.id - b!.data.id).map((e) => e!.event)).toEqual([
      'requirement.created',
      'run.started',
      'pull_request.created',
      'timer.created',
      'message.created',
    ]);
    events.close();
    // The child's own agent got the parent's message in a run of its own.
    await until(
      'the child to hear the message',
      async () => stub.requests.some((r) => r.transcript.includes('Use contract version 2.')),
      60_000,
      200,
    );
  });
});
