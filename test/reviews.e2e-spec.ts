import { ok } from './support/api';
import { type Json, sendUntyped } from './support/http';
import type { ManagerProcess } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';
import { useRealAgentWorld } from './support/real-agent-world';

// On-demand AI reviews with the real Codex and Claude Code CLIs as reviewers, driven by the
// model stub. The PR is registered by a real RD run through code-factory-cli.

const PROVIDERS = REAL_AGENT_CLIS;

jest.setTimeout(120_000);

describe.each(PROVIDERS)('review requests with the real $provider CLI', (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'review', (world) => ({ manager, stub } = world));

  const runsOf = async (id: string) =>
    (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items;
  const rdIdle = (id: string) =>
    until(
      `RD of ${id} to be idle`,
      async () => (await runsOf(id)).every((r) => r.status !== 'running') || undefined,
      90_000,
      200,
    );
  const register = (number: number, sha: string, status = 'open') =>
    `code-factory-cli pr register --url https://github.com/org/repo/pull/${number} --title "PR ${number}" --base-branch main --head-branch b${number} --head-sha ${sha} --status ${status}`;
  const refused = (request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string) =>
    expectRefused(manager.dataDirectory(), request, status, code);

  it('reviews an open PR once at a time, marks it stale when the head moves, and wakes RD with the summary', async () => {
    const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Reviewed work' } }));
    stub.scriptFor(requirement.id, [
      { shell: register(42, '1111111aaaa') },
      { shell: register(43, '2222222bbbb', 'draft') },
      { text: 'PRs registered.' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Open the PRs ${requirement.id}` },
    });
    await rdIdle(requirement.id);
    const prs = (
      await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId: requirement.id } } }))
    ).items;
    const open = prs.find((p) => p.number === 42)!;
    const draft = prs.find((p) => p.number === 43)!;

    const url = 'https://github.com/org/repo/pull/42';
    // The reviewer answers only after the PR has moved under it (a fixed delay raced a slow RD run).
    let headMoved!: () => void;
    const moving = new Promise<void>((resolve) => (headMoved = resolve));
    stub.scriptFor(url, [
      {
        after: moving,
        then: { text: 'Two findings: the flush path races with compaction (src/flush.ts:88); a test is missing.' },
      },
    ]);
    const events = await connectSse(`${manager.origin}/api/events`);
    const requested = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: open.id } },
      body: { prompt: 'Look at the flush path', provider },
    });
    expect(requested.status).toBe(202);
    expect(requested.data).toMatchObject({
      accepted: true,
      pullRequestId: open.id,
      reviewRequest: {
        prompt: 'Look at the flush path',
        provider,
        requestedBy: 'human',
        requirementId: requirement.id,
        stale: false,
        status: 'running',
        targetHeadSha: '1111111aaaa',
      },
      run: { inputFromSequence: null, role: 'reviewer', sessionId: null, status: 'running' },
    });
    const review = requested.data!.reviewRequest;

    await refused(
      () =>
        manager.api.POST('/api/pull-requests/{id}/review-requests', {
          params: { path: { id: open.id } },
          body: { provider },
        }),
      409,
      'review_active',
    );
    await refused(
      () =>
        manager.api.POST('/api/pull-requests/{id}/review-requests', {
          params: { path: { id: draft.id } },
          body: { provider },
        }),
      409,
      'pull_request_not_open',
    );
    await refused(
      () =>
        manager.api.POST('/api/pull-requests/{id}/review-requests', {
          params: { path: { id: 'pr_00000000-0000-4000-8000-000000000000' } },
          body: { provider },
        }),
      404,
      'pull_request_not_found',
    );
    // An unknown provider: untyped on purpose.
    await refused(
      () =>
        sendUntyped(manager.origin, 'POST', `/api/pull-requests/${open.id}/review-requests`, { provider: 'gemini' }),
      400,
    );
    await refused(
      () =>
        manager.api.POST('/api/pull-requests/{id}/review-requests', {
          params: { path: { id: open.id } },
          body: { prompt: 'x'.repeat(10_001), provider },
        }),
      400,
    );

    // The RD agent pushes a new head while the review runs: the review becomes stale.
    stub.scriptFor(`Push again ${requirement.id}`, [{ shell: register(42, '3333333cccc') }, { text: 'Pushed.' }]);
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: requirement.id } },
      body: { message: `Push again ${requirement.id}` },
    });
    const moved = await until('the stale review event', async () =>
      events.events.find(
        (e) => e.event === 'pull_request.updated' && (e.data.payload as { reviewRequests?: unknown[] }).reviewRequests,
      ),
    );
    expect(moved.data.payload).toMatchObject({
      pullRequest: { headSha: '3333333cccc', id: open.id },
      reviewRequests: [{ id: review.id, stale: true, status: 'running' }],
    });
    headMoved();

    const finished = await until(
      'the review to finish',
      async () => {
        const [latest] = (
          await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId: open.id } } }))
        ).items;
        return latest.status !== 'running' && latest;
      },
      90_000,
      200,
    );
    expect(finished).toMatchObject({ id: review.id, stale: true, status: 'succeeded', targetHeadSha: '1111111aaaa' });
    expect(finished.finishedAt).not.toBeNull();

    const reviewerRequest = stub.requests.find((r) => r.marker === url)!;
    expect(reviewerRequest.prompt).toContain(`Review GitHub PR ${url}`);
    expect(reviewerRequest.prompt).toContain('Look at the flush path');
    expect(JSON.stringify(reviewerRequest.body)).toContain('Never modify the workspace');
    // A reviewer has no credential, so no Agent Manager tools; the RD run that registered the PRs had them.
    expect(reviewerRequest.tools.filter((name) => name.includes('code_factory'))).toEqual([]);
    expect(
      stub.requests.find((r) => r.marker === requirement.id)!.tools.some((name) => name.includes('code_factory')),
    ).toBe(true);

    const messages = (
      await ok(
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: requirement.id }, query: { limit: 200 } },
        }),
      )
    ).items;
    const summary = messages.find((m) => m.author === 'reviewer')!;
    expect(summary).toMatchObject({
      deliverToRd: true,
      metadata: { pullRequestId: open.id, reviewRequestId: review.id, stale: true },
    });
    expect(summary.body).toContain('the flush path races with compaction');
    expect(summary.body).toContain('stale');

    // The summary woke the RD session: a run took it as input.
    await until(
      'RD to take the review',
      async () =>
        stub.requests.some((r) => r.marker !== url && r.transcript.includes('the flush path races with compaction')),
      90_000,
      200,
    );
    const outcome = events.events.find((e) => e.event === 'run.succeeded' && e.data.runId === review.runId);
    expect(outcome?.data.payload).toMatchObject({
      reviewRequest: { id: review.id, status: 'succeeded' },
      run: { role: 'reviewer' },
    });
    expect(events.events.find((e) => e.event === 'review_request.started')?.data.payload).toMatchObject({
      reviewRequest: { id: review.id },
    });
    events.close();

    // Not stale any more for a new request: it targets the new head.
    await rdIdle(requirement.id);
    stub.scriptFor(url, [{ text: 'Looks good now.' }]);
    const again = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: open.id } },
      body: { provider },
    });
    expect(again.data!.reviewRequest).toMatchObject({ stale: false, targetHeadSha: '3333333cccc' });
    await until(
      'second review',
      async () =>
        (await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId: open.id } } }))).items[0]
          .status === 'succeeded' || undefined,
      90_000,
      200,
    );
  });
});
