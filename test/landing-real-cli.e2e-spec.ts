import { ok } from './support/api';
import { createRequirement, git, initRepository, settled, startRun } from './support/git-repo';
import type { ManagerProcess, Sandbox } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { useRealAgentWorld } from './support/real-agent-world';
import { until } from './support/wait';

// Issue 28 with the programs our users run: two real agents edit the same line, both are queued
// to land; the first lands, the queue pauses on the second and its real CLI is asked (once) to
// rebase. Told by the model to do it, the agent rebases in its worktree, its run ends clean, and
// the queue lands it. The request reaches the model as the manager wrote it.

jest.setTimeout(240_000);

describe.each(REAL_AGENT_CLIS)('the merge queue with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'landing', (world) => ({ manager, sandbox, stub } = world), {
    prepare: (s) => initRepository(s.workspace, { 'q.txt': 'one\ntwo\nthree\n' }),
  });

  it('pauses on the conflicting one, its agent rebases when asked, and the queue lands it', async () => {
    const [first, second] = [
      await createRequirement(manager, { provider, title: 'First edit' }),
      await createRequirement(manager, { provider, title: 'Second edit' }),
    ];
    for (const [requirement, name] of [
      [first, 'first'],
      [second, 'second'],
    ] as const) {
      stub.scriptFor(requirement.id, [
        { shell: `printf 'one\\n${name}\\nthree\\n' > q.txt && git commit -q -am "${name}"` },
        { text: `${name} committed.` },
      ]);
      await startRun(manager, requirement.id, `Edit q.txt and commit (${requirement.id})`);
    }
    for (const requirement of [first, second]) {
      expect((await settled(manager, requirement.id, 1)).run.status).toBe('succeeded');
    }
    // What the model will answer to the queue's request: rebase, keeping this branch's side.
    stub.scriptFor('next in the merge queue', [
      { shell: 'git rebase -q -X theirs main' },
      { text: 'Rebased onto main.' },
    ]);
    for (const requirement of [first, second]) {
      await ok(
        manager.api.POST('/api/landing-queue', { body: { method: 'squash', requirementId: requirement.id } }),
        201,
      );
    }
    await until(
      'the queue to land both',
      async () => ((await ok(manager.api.GET('/api/landing-queue'))).items.length === 0 ? true : undefined),
      180_000,
      250,
    );
    expect(git(sandbox.workspace, 'log', '--format=%s', 'main').trim().split('\n')).toEqual([
      'Second edit',
      'First edit',
      'initial',
    ]);
    expect(git(sandbox.workspace, 'show', 'main:q.txt')).toBe('one\nsecond\nthree\n');
    const messages = (
      await ok(
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: second.id }, query: { limit: 200 } },
        }),
      )
    ).items;
    const requests = messages.filter((m) => m.code === 'landing.rebase_requested');
    expect(requests).toHaveLength(1);
    expect(requests[0].body).toContain('q.txt');
    // The CLI took it to the model, and the rebase run succeeded.
    expect(stub.requests.some((r) => JSON.stringify(r.body).includes('next in the merge queue'))).toBe(true);
    const runs = (
      await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: second.id } } }))
    ).items.filter((r) => r.role === 'rd');
    expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    for (const requirement of [first, second]) {
      expect(
        (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))).landing,
      ).toMatchObject({ landedMethod: 'squash' });
    }
  });
});
