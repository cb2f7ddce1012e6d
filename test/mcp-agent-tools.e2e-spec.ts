import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from './support/api';
import { descendantCommandLines } from './support/proc';
import { createRequirement, git, initRepository, reply, settled, startRun } from './support/git-repo';
import type { ManagerProcess } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS, StubRequest, resolveToolName } from './support/model-stub';
import { useRealAgentWorld } from './support/real-agent-world';
import { until } from './support/wait';

// Agent Manager's per-run MCP tools for real: the pinned Codex and Claude Code CLIs, started by
// the manager (inside the agent sandbox) with the manager's own endpoint `/api/agent/mcp`
// configured for the run, told by the model stub to call each tool by name. No MCP server process
// is started for the run. A user's own MCP server, configured in the CLI's own
// config in the test HOME, must stay offered beside ours.

jest.setTimeout(150_000);

const USER_SERVER = path.join(__dirname, 'fixtures', 'mcp', 'user-server.js');
const AGENT_TOOLS = [
  'register_pull_request',
  'propose_requirement',
  'requirement_action',
  'list_related',
  'message_related',
  'requirement_landing',
  'register_timer',
  'list_timers',
  'cancel_timer',
  'review_comments',
  'reply_review_comment',
  'preview_start',
  'preview_status',
  'preview_output',
];

/** The text of the latest tool result the CLI sent back to the model. */
function lastResult(request: StubRequest): string {
  const at = request.transcript.lastIndexOf('tool_result: ');
  return at < 0 ? '' : request.transcript.slice(at);
}

function idIn(request: StubRequest, prefix: string): string {
  const match = new RegExp(`"id": "(${prefix}_[^"]+)"`).exec(lastResult(request));
  if (!match) {
    throw new Error(`no ${prefix} id in the last tool result: ${lastResult(request).slice(0, 500)}`);
  }
  return match[1];
}

/** The user's own server, written where each CLI reads its user configuration. */
function configureUserServer(provider: string, agentEnv: Record<string, string>): void {
  if (provider === 'codex') {
    fs.appendFileSync(
      path.join(agentEnv.CODEX_HOME, 'config.toml'),
      // A start-up timeout the load of a whole test run cannot reach (Codex's default is 10 s; the
      // server is then left out of the run's tools, and the script's first call finds it missing).
      `\n[mcp_servers.user]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(USER_SERVER)}]\nstartup_timeout_sec = 120\n`,
    );
  } else {
    // alwaysLoad, as for ours: otherwise Claude offers it through ToolSearch only.
    const config = {
      mcpServers: { user: { alwaysLoad: true, args: [USER_SERVER], command: process.execPath, type: 'stdio' } },
    };
    fs.writeFileSync(path.join(agentEnv.HOME, '.claude.json'), JSON.stringify(config));
  }
}

describe.each(REAL_AGENT_CLIS)("the run's MCP tools with the real $provider CLI", (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'mcp', (world) => {
    ({ manager, stub } = world);
    configureUserServer(provider, world.agentEnv);
  });

  it('offers the tools beside the user’s own, does what each CLI command does, and refuses what is out of scope without writing', async () => {
    const parent = await ok(
      manager.api.POST('/api/requirements', {
        body: { description: 'Split the work.', provider, title: 'Parent work' },
      }),
    );
    const unrelated = await ok(
      manager.api.POST('/api/requirements', {
        body: { description: 'Someone else’s work.', provider, title: 'Unrelated' },
      }),
    );
    const marker = `MCP-RUN-${provider}`;
    let childId = '';
    stub.scriptFor(marker, [
      { arguments: { text: 'from the user server' }, tool: 'echo' },
      { arguments: { afterSeconds: 60, description: 'Check the CI of PR 42' }, tool: 'register_timer' },
      // Held, so the process walk below sees the run alive with its tools connected.
      { delayMs: 1500, then: { arguments: {}, tool: 'list_timers' } },
      { arguments: (request) => ({ timerId: idIn(request, 'tmr') }), tool: 'cancel_timer' },
      {
        arguments: {
          autoReview: { maxRounds: 2 },
          budget: { maxTokens: 90_000 },
          description: 'Do the lexer part',
          title: 'Child work',
        },
        tool: 'propose_requirement',
      },
      {
        arguments: (request) => ({ action: 'start', requirementId: (childId = idIn(request, 'req')) }),
        tool: 'requirement_action',
      },
      { arguments: {}, tool: 'list_related' },
      // Its working copy is being made by this very run: the preview is there to ask about, not started.
      { arguments: {}, tool: 'preview_status' },
      { arguments: () => ({ message: 'Use contract version 2.', requirementId: childId }), tool: 'message_related' },
      {
        arguments: {
          baseBranch: 'main',
          headBranch: 'split-parser',
          headSha: '0a1b2c3d',
          number: 42,
          repository: 'org/repo',
          status: 'open',
          title: 'Split the parser',
          url: 'https://github.com/org/repo/pull/42',
        },
        tool: 'register_pull_request',
      },
      // Out of scope: an unrelated Requirement can be neither messaged nor acted on.
      { arguments: { message: 'psst', requirementId: unrelated.id }, tool: 'message_related' },
      { arguments: { action: 'start', requirementId: unrelated.id }, tool: 'requirement_action' },
      // Bad input: refused by the schema before any call.
      { arguments: { afterSeconds: 5, description: 'Too soon' }, tool: 'register_timer' },
      { text: 'All tools called.' },
    ]);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: parent.id } },
          body: { message: `Go ${marker}` },
        })
      ).status,
    ).toBe(202);

    // Every process under the manager while the run lives: the CLI, and no `code-factory-cli mcp`.
    const seen = new Set<string>();
    const walk = setInterval(
      () => descendantCommandLines(manager.child.pid!).forEach((argv) => seen.add(argv.join(' '))),
      100,
    );
    const run = await until(
      'the parent run to finish',
      async () => {
        const [latest] = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: parent.id } } })))
          .items;
        return latest?.status !== 'running' && latest;
      },
      120_000,
      200,
    ).finally(() => clearInterval(walk));
    expect(
      [...seen].filter((argv) => argv.includes(provider === 'codex' ? 'exec --json' : '--output-format stream-json')),
    ).not.toEqual([]);
    // (The walk does see MCP servers the CLI starts: the user's own stdio one.)
    expect([...seen].filter((argv) => argv.includes('user-server.js'))).not.toEqual([]);
    expect([...seen].filter((argv) => /code-factory-cli\S*\s+mcp\b/.test(argv))).toEqual([]);
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    // (The trace in the failure message says why a run failed.)
    expect({
      run,
      trace:
        run.status === 'succeeded'
          ? []
          : trace.map((entry) => `${entry.kind} ${entry.title}: ${entry.detail?.slice(0, 1000)}`),
    }).toMatchObject({
      run: { status: 'succeeded', taskSummary: 'All tools called.' },
      trace: [],
    });

    // Offered to the model in every request of the run: our fourteen tools and the user's own.
    const requests = stub.requests.filter((request) => request.marker === marker);
    expect(requests).toHaveLength(14);
    for (const request of requests) {
      for (const tool of AGENT_TOOLS) {
        expect(resolveToolName(tool, request.tools)).toMatch(/code_factory[._]{1,2}/);
      }
      expect(request.tools).toContain(provider === 'codex' ? 'mcp__user.echo' : 'mcp__user__echo');
    }
    // No shell fallback was needed.
    expect(
      requests
        .flatMap((request) => request.transcript.split('\n'))
        .filter((line) => /^tool_call: (exec_command|Bash) /.test(line)),
    ).toEqual([]);

    // Traces name each MCP call and its result; the three refusals fail, with the server's or the schema's reason.
    const results = trace.filter((entry) => entry.kind === 'tool_result');
    expect(results.map((entry) => `${entry.toolName} ${entry.status}`)).toEqual([
      'user.echo completed',
      'code_factory.register_timer completed',
      'code_factory.list_timers completed',
      'code_factory.cancel_timer completed',
      'code_factory.propose_requirement completed',
      'code_factory.requirement_action completed',
      'code_factory.list_related completed',
      'code_factory.preview_status completed',
      'code_factory.message_related completed',
      'code_factory.register_pull_request completed',
      'code_factory.message_related failed',
      'code_factory.requirement_action failed',
      'code_factory.register_timer failed',
    ]);
    expect(results[0].detail).toContain('echo: from the user server');
    expect(results[7].detail).toContain(`"requirementId": "${parent.id}"`);
    expect(results[7].detail).toContain('"state": "stopped"');
    expect(results[10].detail).toMatch(/message refused \(409 not_related\): .+/);
    expect(results[11].detail).toMatch(/start refused \(\d{3} [a-z_]+\): .+/);
    expect(results[12].detail).toMatch(/afterSeconds|60/);
    expect(trace.filter((entry) => entry.kind === 'tool_call').map((entry) => entry.toolName)).toContain(
      'code_factory.list_timers',
    );

    // What each call did, exactly as the matching code-factory-cli command does it.
    const timers = (await ok(manager.api.GET('/api/requirements/{id}/timers', { params: { path: { id: parent.id } } })))
      .items;
    expect(timers).toEqual([
      expect.objectContaining({
        description: 'Check the CI of PR 42',
        intervalSeconds: 60,
        schedule: 'once',
        status: 'cancelled',
      }),
    ]);
    const child = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: childId } } }));
    expect(child).toMatchObject({
      budget: { maxCostUsd: null, maxTokens: 90_000 },
      createdBy: 'rd_agent',
      parentRequirementId: parent.id,
      provider,
      sourceSessionId: parent.session.id,
      title: 'Child work',
    });
    // The tool's autoReview reached the child: its reviewer defaults to the other provider.
    expect(child.autoReview).toEqual({ maxRounds: 2, provider: provider === 'codex' ? 'claude-code' : 'codex' });
    expect(['doing', 'waiting_confirmation']).toContain(child.status);
    const related = results[6].detail;
    expect(related).toContain(childId);
    const childConversation = (
      await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: childId } } }))
    ).items;
    expect(childConversation).toContainEqual(
      expect.objectContaining({ author: 'rd_agent', body: 'Use contract version 2.', sourceRequirementId: parent.id }),
    );
    const prs = (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId: parent.id } } })))
      .items;
    expect(prs).toEqual([
      expect.objectContaining({
        headSha: '0a1b2c3d',
        number: 42,
        repository: 'org/repo',
        status: 'open',
        title: 'Split the parser',
      }),
    ]);

    // The refused calls wrote nothing.
    const untouched = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: unrelated.id } } }));
    expect(untouched).toMatchObject({ status: 'todo' });
    expect(
      (
        await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: unrelated.id } } }))
      ).items.map((m: { body: string }) => m.body),
    ).not.toContain('psst');
    expect(
      (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: unrelated.id } } }))).items,
    ).toEqual([]);
  });

  it("lowers the budget the propose tool asks for to what the current Requirement's tree has left (issue 25 §4)", async () => {
    const capped = await ok(
      manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 5000 }, description: 'Capped.', provider, title: 'Capped parent' },
      }),
    );
    const marker = `MCP-BUDGET-${provider}`;
    stub.scriptFor(marker, [
      {
        arguments: { budget: { maxTokens: 2_000_000_000 }, description: 'Spend freely', title: 'Greedy child' },
        tool: 'propose_requirement',
      },
      { text: 'Proposed.' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: capped.id } },
      body: { message: `Go ${marker}` },
    });
    await until(
      'the capped run to finish',
      async () =>
        (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: capped.id } } }))).items[0]
          ?.status === 'succeeded'
          ? true
          : undefined,
      120_000,
      200,
    );
    const [result] = stub.requests
      .filter((request) => request.marker === marker)
      .map(lastResult)
      .filter((text) => text.includes('Greedy child'));
    expect(result).toContain('budget_clamped');
    const [child] = (
      await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))
    ).items.filter((r) => r.parentRequirementId === capped.id);
    // At most the 5,000, less what the run reported before the call (Claude Code reports as it goes; Codex only at the end).
    expect(child.budget!.maxTokens).toBeGreaterThan(4000);
    expect(child.budget!.maxTokens).toBeLessThanOrEqual(5000);
  });
});

// Issue 28 §5: in a repository, where Requirements get worktrees, the agent asks the conflict
// radar about its own branch and is told to rebase when the base moved under it on the same line.
describe.each(REAL_AGENT_CLIS)('the requirement_landing tool with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let sandbox: { workspace: string };
  useRealAgentWorld(
    cli,
    'landing',
    (world) => {
      ({ manager, sandbox, stub } = world);
    },
    { prepare: (fresh) => initRepository(fresh.workspace, { 'a.txt': 'one\ntwo\nthree\n' }) },
  );

  it('answers with the conflicting files and the advice to rebase', async () => {
    const requirement = await createRequirement(manager, {
      description: 'Change line two.',
      provider,
      title: 'Line two',
    });
    const first = `LANDING-FIRST-${provider}`;
    stub.scriptFor(first, [{ text: 'Ready.' }]);
    await startRun(manager, requirement.id, `Go ${first}`);
    const { requirement: ready } = await settled(manager, requirement.id, 1);
    const worktree = ready.worktree!.path!;
    // Its branch changes line two; then the person changes the same line on main.
    fs.writeFileSync(path.join(worktree, 'a.txt'), 'one\nmine\nthree\n');
    git(worktree, 'commit', '-qam', 'Line two, mine');
    fs.writeFileSync(path.join(sandbox.workspace, 'a.txt'), 'one\ntheirs\nthree\n');
    git(sandbox.workspace, 'commit', '-qam', 'Line two, theirs');

    const second = `LANDING-CHECK-${provider}`;
    stub.scriptFor(second, [{ arguments: {}, tool: 'requirement_landing' }, { text: 'Checked.' }]);
    await reply(manager, requirement.id, `Check ${second}`);
    const { run } = await settled(manager, requirement.id, 2);
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    expect({
      status: run.status,
      trace:
        run.status === 'succeeded'
          ? []
          : trace.map((entry) => `${entry.kind} ${entry.title}: ${entry.detail?.slice(0, 1000)}`),
    }).toEqual({
      status: 'succeeded',
      trace: [],
    });
    const results = trace.filter((entry) => entry.kind === 'tool_result');
    // Without the call (seen once in CI, a run that succeeded with no tool result and not seen
    // since), say what the model stub was asked and answered for this run, and the run's trace.
    const asked = stub.requests
      .filter((r) => r.marker === second)
      .map((r) => ({
        answered: r.turn,
        offered: r.tools.filter((t) => t.includes('requirement_landing')),
        tools: r.tools.length,
      }));
    expect({
      results: results.map((entry) => `${entry.toolName} ${entry.status}`),
      why:
        results.length === 1
          ? null
          : { asked, trace: trace.map((entry) => `${entry.kind} ${entry.title}: ${entry.detail?.slice(0, 300)}`) },
    }).toEqual({ results: ['code_factory.requirement_landing completed'], why: null });
    // What the model was given back: its own Requirement, the file, the advice.
    const [request] = stub.requests.filter((r) => r.marker === second && r.transcript.includes('tool_result: '));
    const answer = lastResult(request);
    expect(answer).toContain(`"requirementId": "${requirement.id}"`);
    expect(answer).toContain('"mergesCleanly": false');
    expect(answer).toMatch(/"conflictPaths": \[\s*"a\.txt"\s*\]/);
    expect(answer).toContain('git rebase main');
  });
});

// Issue 46 §2–3: a person's review of three line comments (one a range, one on a removed line)
// reaches the real CLI as one message with the three anchors, and the agent answers and resolves a
// thread through its MCP tools.
describe.each(REAL_AGENT_CLIS)('review threads with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(
    cli,
    'review',
    (world) => {
      ({ manager, stub } = world);
    },
    { prepare: (fresh) => initRepository(fresh.workspace, { 'a.txt': 'one\ntwo\nthree\nfour\nfive\nsix\n' }) },
  );

  it('takes a review as one message and resolves a thread with reply_review_comment', async () => {
    const requirement = await createRequirement(manager, { description: 'Edit a.txt.', provider, title: 'Edits' });
    const first = `REVIEW-FIRST-${provider}`;
    stub.scriptFor(first, [{ text: 'Ready.' }]);
    await startRun(manager, requirement.id, `Go ${first}`);
    const { requirement: ready } = await settled(manager, requirement.id, 1);
    // The agent's work, as its working copy holds it: line two changed, two lines added, line five removed.
    fs.writeFileSync(path.join(ready.worktree!.path!, 'a.txt'), 'one\nTWO\nthree\nfour\nextra 1\nextra 2\nsix\n');
    git(ready.worktree!.path!, 'commit', '-qam', 'Edits');
    await ok(manager.api.POST('/api/requirements/{id}/worktree/refresh', { params: { path: { id: requirement.id } } }));
    const draft = (body: Record<string, unknown>) =>
      ok(
        manager.api.POST('/api/requirements/{id}/review-comments', {
          body: { body: 'x', line: 2, path: 'a.txt', ...body },
          params: { path: { id: requirement.id } },
        }),
        201,
      );
    const single = await draft({ body: 'Why upper case?', line: 2 });
    await draft({ body: 'One line would do.', endLine: 6, line: 5 });
    await draft({ body: 'Keep five.', line: 5, side: 'old' });

    const marker = `REVIEW-SENT-${provider}`;
    stub.scriptFor(marker, [
      { arguments: {}, tool: 'review_comments' },
      {
        arguments: { body: 'Lower case now.', id: single.id, resolve: true },
        tool: 'reply_review_comment',
      },
      { text: 'Answered.' },
    ]);
    await ok(
      manager.api.POST('/api/requirements/{id}/reviews', {
        body: { body: `Thanks. ${marker}` },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    const { run } = await settled(manager, requirement.id, 2);
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    expect({
      results: trace.filter((e) => e.kind === 'tool_result').map((e) => `${e.toolName} ${e.status}`),
      status: run.status,
    }).toEqual({
      results: ['code_factory.review_comments completed', 'code_factory.reply_review_comment completed'],
      status: 'succeeded',
    });
    // One user message, holding the three anchors with their quoted lines.
    const [request] = stub.requests.filter((r) => r.marker === marker);
    expect(request.prompt).toContain('Review of your changes: 3 comments.');
    expect(request.prompt).toContain(`a.txt:2 (${single.id})\n> TWO\n\nWhy upper case?`);
    expect(request.prompt).toMatch(/a\.txt:5-6 \(rvc_[^)]+\)\n> extra 1\n> extra 2\n\nOne line would do\./);
    expect(request.prompt).toMatch(/a\.txt:5 \(before the change\) \(rvc_[^)]+\)\n> five\n\nKeep five\./);
    expect(request.prompt).toContain(`Thanks. ${marker}`);
    expect(lastResult(stub.requests.filter((r) => r.marker === marker)[1])).toContain(single.id);
    const answered = (
      await ok(manager.api.GET('/api/requirements/{id}/review-comments', { params: { path: { id: requirement.id } } }))
    ).items.find((c) => c.id === single.id);
    expect(answered).toMatchObject({
      replies: [{ author: { id: run.id, kind: 'agent' }, body: 'Lower case now.' }],
      state: 'resolved',
    });
  });
});
