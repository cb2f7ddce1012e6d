import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { type BrowserSession, launchBrowser } from './support/browser';
import { FakeGitHubServer } from './support/fake-github-server';
import { sendUntyped } from './support/http';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { expectRefused } from './support/refusals';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

// The cross-model review loop (issue 18 §3) with both real CLIs logged in to the model stub: the
// RD agent of one provider registers and pushes its PR through code-factory-cli, the other
// provider's CLI reviews each new head, and the loop ends on a "no findings" verdict or at
// maxRounds. Markers: the RD agent's queue is its Requirement id, the reviewer's the PR's URL
// (the reviewer's prompt is "Review GitHub PR <url>").

jest.setTimeout(300_000);

type PullRequest = Schemas['PullRequestResponseDto'];
type Review = Schemas['ReviewRequestResponseDto'];

describe('cross-model review loop with the real CLIs', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let events: SseConnection;
  /** The Requirements whose loops ended clean (PR #42) and at maxRounds (PR #52), for the dashboard test. */
  let cleanId = '';
  let cappedId = '';

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    const dir = fs.mkdtempSync(path.join('/var/tmp', 'am-review-loop-'));
    const [codex, claude] = REAL_AGENT_CLIS;
    // One HOME (dir/home) for both: each CLI reads its own configuration there.
    const agentEnv = { ...codex.env(stub, dir), ...claude.env(stub, dir) };
    manager = await startManager({
      env: {
        ...agentEnv,
        CODE_FACTORY_CLAUDE_EXECUTABLE: claude.executable,
        CODE_FACTORY_CODEX_EXECUTABLE: codex.executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
      },
      sandbox,
    });
    events = await connectSse(`${manager.origin}/api/events`);
  });
  afterAll(async () => {
    events?.close();
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  const runsOf = async (id: string) =>
    (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 200 } } }))).items;
  const rdIdle = (id: string) =>
    until(
      `RD of ${id} to be idle`,
      async () => (await runsOf(id)).every((r) => r.status !== 'running') || undefined,
      120_000,
      200,
    );
  const prOf = async (requirementId: string, number: number) =>
    (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId } } }))).items.find(
      (p) => p.number === number,
    );
  const reviewsOf = async (pullRequestId: string) =>
    (await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId } } }))).items.reverse();
  const messagesOf = async (id: string) =>
    (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } })))
      .items;
  const register = (number: number, sha: string) =>
    `code-factory-cli pr register --url https://github.com/org/repo/pull/${number} --title "PR ${number}" --base-branch main --head-branch b${number} --head-sha ${sha} --status open`;
  /** The loop states the PR's events carried, in order, without repeats. */
  const loopStates = (pullRequestId: string) =>
    events.events
      .filter(
        (e) => e.event === 'pull_request.updated' && (e.data.payload.pullRequest as PullRequest).id === pullRequestId,
      )
      .map((e) => {
        const { round, state } = (e.data.payload.pullRequest as PullRequest).autoReview;
        return `${state}:${round}`;
      })
      .filter((s, i, all) => s !== all[i - 1]);
  const eventIndex = (predicate: (e: SseConnection['events'][number]) => boolean) => events.events.findIndex(predicate);

  it('takes autoReview on create and edit, defaults the reviewer to the other provider, and refuses bad values', async () => {
    const created = await manager.api.POST('/api/requirements', {
      body: { autoReview: {}, provider: 'codex', title: 'Defaults' },
    });
    expect(created.status).toBe(201);
    expect(created.data!.autoReview).toEqual({ maxRounds: 3, provider: 'claude-code' });
    const plain = await ok(
      manager.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'No loop' } }),
    );
    expect(plain.autoReview).toBeNull();

    const dataDir = manager.dataDirectory();
    // Malformed autoReview values on purpose: untyped.
    const refused = (body: object) =>
      expectRefused(
        dataDir,
        () => sendUntyped(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title: 'Bad', ...body }),
        400,
      );
    await refused({ autoReview: { maxRounds: 0 } });
    await refused({ autoReview: { maxRounds: 21 } });
    await refused({ autoReview: { maxRounds: 1.5 } });
    await refused({ autoReview: { provider: 'gemini' } });
    await refused({ autoReview: { extra: true } });
    await refused({ autoReview: 'yes' });
    await refused({ autoReview: [] });

    const edited = await manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: plain.id } },
      body: { autoReview: { maxRounds: 5 } },
    });
    expect(edited.status).toBe(200);
    expect(edited.data!.autoReview).toEqual({ maxRounds: 5, provider: 'codex' });
    const again = await manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: plain.id } },
      body: { autoReview: { provider: 'claude-code' } },
    });
    expect(again.data!.autoReview).toEqual({ maxRounds: 3, provider: 'claude-code' });
    await expectRefused(
      dataDir,
      () =>
        manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: plain.id } },
          body: { autoReview: { maxRounds: -1 } },
        }),
      400,
    );
    const off = await manager.api.PATCH('/api/requirements/{id}', {
      params: { path: { id: plain.id } },
      body: { autoReview: null },
    });
    expect(off.data!.autoReview).toBeNull();
    expect(
      (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: plain.id } } }))).autoReview,
    ).toBeNull();
  });

  it('reviews each pushed head with the other model after the RD run ends, three rounds, until a review reports no findings', async () => {
    const requirement = await ok(
      manager.api.POST('/api/requirements', {
        body: { autoReview: { maxRounds: 3 }, provider: 'codex', title: 'Looped work' },
      }),
    );
    expect(requirement.autoReview).toEqual({ maxRounds: 3, provider: 'claude-code' });
    cleanId = requirement.id;
    const url = 'https://github.com/org/repo/pull/42';
    stub.scriptFor(requirement.id, [
      // The agent's own proposal asks for a loop through the CLI.
      {
        shell:
          'code-factory-cli requirement propose --title "Looped child" --description "A follow-up" --auto-review --auto-review-rounds 2',
      },
      { shell: register(42, 'aaaa0001') },
      { text: 'Opened the PR.' },
      { shell: register(42, 'aaaa0002') },
      { text: 'Fixed round 1.' },
      { shell: register(42, 'aaaa0003') },
      { text: 'Fixed round 2.' },
      { text: 'Nothing left to fix.' },
    ]);
    stub.scriptFor(url, [
      { text: 'The flush path races with compaction (src/flush.ts:88).\n\nREVIEW: FINDINGS' },
      { text: 'A test for the race is missing (test/flush.spec.ts).\nREVIEW: FINDINGS' },
      { text: 'The race is fixed and tested.\n\n**REVIEW: NO FINDINGS**' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Open the PR ${requirement.id}` },
    });

    const pr = await until('the PR to be registered', () => prOf(requirement.id, 42), 120_000, 200);
    const clean = await until(
      'the loop to end clean',
      async () =>
        (await prOf(requirement.id, 42))?.autoReview.state === 'clean' ? prOf(requirement.id, 42) : undefined,
      240_000,
      300,
    );
    expect(clean.autoReview).toEqual({
      headSha: 'aaaa0003',
      lastOutcome: 'no_findings',
      maxRounds: 3,
      provider: 'claude-code',
      round: 3,
      state: 'clean',
    });

    const reviews = await reviewsOf(pr.id);
    expect(reviews.map((r) => [r.requestedBy, r.provider, r.targetHeadSha, r.status, r.verdict])).toEqual([
      ['review_loop', 'claude-code', 'aaaa0001', 'succeeded', 'findings'],
      ['review_loop', 'claude-code', 'aaaa0002', 'succeeded', 'findings'],
      ['review_loop', 'claude-code', 'aaaa0003', 'succeeded', 'no_findings'],
    ]);
    // Each round began only once the RD run that pushed its head had ended.
    const rdRuns = (await runsOf(requirement.id)).filter((r) => r.role === 'rd').reverse();
    for (const [i, review] of reviews.entries()) {
      const started = eventIndex(
        (e) => e.event === 'review_request.started' && (e.data.payload.reviewRequest as Review).id === review.id,
      );
      const pushedBy = eventIndex((e) => e.event === 'run.succeeded' && e.data.runId === rdRuns[i].id);
      expect(pushedBy).toBeGreaterThanOrEqual(0);
      expect(started).toBeGreaterThan(pushedBy);
    }
    // The first head came with the PR's creation (pull_request.created), the rest with its updates.
    expect(loopStates(pr.id)).toEqual([
      'reviewing:1',
      'waiting_for_push:1',
      'reviewing:2',
      'waiting_for_push:2',
      'reviewing:3',
      'clean:3',
    ]);

    // The reviewer was the other CLI, told its round and how to say "no findings".
    const reviewerRequests = stub.requests.filter((r) => r.marker === url);
    expect(reviewerRequests.length).toBeGreaterThanOrEqual(3);
    const instructions = JSON.stringify(reviewerRequests[0].body);
    expect(reviewerRequests.every((r) => r.api === 'anthropic')).toBe(true);
    expect(instructions).toContain('REVIEW: NO FINDINGS');
    expect(instructions).toContain('round 1 of at most 3');
    expect(stub.requests.filter((r) => r.marker === requirement.id).every((r) => r.api === 'openai')).toBe(true);

    // Every summary reached RD; the end is a system message; RD took the last summary and rested.
    await rdIdle(requirement.id);
    const messages = await messagesOf(requirement.id);
    const summaries = messages.filter((m) => m.author === 'reviewer');
    expect(summaries.map((m) => m.deliverToRd)).toEqual([true, true, true]);
    expect(summaries[0].body).toContain('The flush path races');
    const ending = messages.filter((m) => m.author === 'system' && m.body.includes('review loop'));
    expect(ending).toHaveLength(1);
    expect(ending[0].body).toContain('ends clean after 3 rounds');
    expect(ending[0]).toMatchObject({
      deliverToRd: false,
      metadata: { autoReview: { round: 3, state: 'clean' }, pullRequestId: pr.id },
    });
    await until(
      'RD to take the clean review',
      async () =>
        stub.requests.some((r) => r.marker === requirement.id && r.transcript.includes('The race is fixed and tested')),
      60_000,
      200,
    );

    // The proposal through code-factory-cli carried its own loop (the reviewer: the other one than codex).
    const children = (
      await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))
    ).items.filter((r: { parentRequirementId: string | null }) => r.parentRequirementId === requirement.id);
    expect(children.map((c: { autoReview: unknown }) => c.autoReview)).toEqual([
      { maxRounds: 2, provider: 'claude-code' },
    ]);
  });

  it('stops at maxRounds, reviews only the newest head a run pushed, and reviews nothing more once ended', async () => {
    const requirement = await ok(
      manager.api.POST('/api/requirements', {
        body: { autoReview: { maxRounds: 2 }, provider: 'claude-code', title: 'Capped loop' },
      }),
    );
    expect(requirement.autoReview).toEqual({ maxRounds: 2, provider: 'codex' });
    cappedId = requirement.id;
    const url = 'https://github.com/org/repo/pull/52';
    stub.scriptFor(requirement.id, [
      // Two pushes in one run: one review, of the newest head.
      { shell: register(52, 'bbbb0001') },
      { shell: register(52, 'bbbb0002') },
      { text: 'Opened and amended.' },
      { shell: register(52, 'bbbb0003') },
      { text: 'Tried again.' },
      { shell: register(52, 'bbbb0004') },
      { text: 'Pushed after the loop ended.' },
    ]);
    stub.scriptFor(url, [
      { text: 'Error handling is missing in src/a.ts:3.\nREVIEW: FINDINGS' },
      { text: 'Still missing in src/a.ts:3.\nREVIEW: FINDINGS' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Open the PR ${requirement.id}` },
    });

    const pr = await until('the PR to be registered', () => prOf(requirement.id, 52), 120_000, 200);
    await until(
      'the loop to reach its limit',
      async () => (await prOf(requirement.id, 52))?.autoReview.state === 'max_rounds' || undefined,
      240_000,
      300,
    );
    // RD took the second summary and pushed bbbb0004; once it rested, a person can review: the loop started nothing.
    await until(
      'the push after the end',
      async () => (await prOf(requirement.id, 52))?.headSha === 'bbbb0004' || undefined,
      120_000,
      200,
    );
    await rdIdle(requirement.id);
    stub.scriptFor(url, [{ text: 'Manual look: fine.\nREVIEW: NO FINDINGS' }]);
    const manual = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: pr.id } },
      body: { provider: 'codex' },
    });
    expect(manual.status).toBe(202);
    expect(manual.data!.reviewRequest).toMatchObject({ requestedBy: 'human', targetHeadSha: 'bbbb0004' });
    await until(
      'the manual review',
      async () => (await reviewsOf(pr.id)).at(-1)?.status === 'succeeded' || undefined,
      120_000,
      300,
    );

    const reviews = await reviewsOf(pr.id);
    expect(reviews.map((r) => [r.requestedBy, r.provider, r.targetHeadSha, r.verdict])).toEqual([
      ['review_loop', 'codex', 'bbbb0002', 'findings'],
      ['review_loop', 'codex', 'bbbb0003', 'findings'],
      ['human', 'codex', 'bbbb0004', 'no_findings'],
    ]);
    // A person's clean review does not touch the loop.
    expect((await prOf(requirement.id, 52))!.autoReview).toEqual({
      headSha: 'bbbb0003',
      lastOutcome: 'findings',
      maxRounds: 2,
      provider: 'codex',
      round: 2,
      state: 'max_rounds',
    });
    expect(loopStates(pr.id)).toEqual(['off:0', 'reviewing:1', 'waiting_for_push:1', 'reviewing:2', 'max_rounds:2']);
    // The head that moved while the first run was running was reviewed only after that run ended.
    const [firstRun] = (await runsOf(requirement.id)).filter((r) => r.role === 'rd').reverse();
    const firstRunEnded = eventIndex((e) => e.event === 'run.succeeded' && e.data.runId === firstRun.id);
    const firstRound = eventIndex(
      (e) => e.event === 'review_request.started' && (e.data.payload.reviewRequest as Review).id === reviews[0].id,
    );
    expect(firstRunEnded).toBeGreaterThanOrEqual(0);
    expect(firstRound).toBeGreaterThan(firstRunEnded);
    const ending = (await messagesOf(requirement.id)).filter(
      (m) => m.author === 'system' && m.body.includes('review loop'),
    );
    expect(ending).toHaveLength(1);
    expect(ending[0].body).toContain('round 2 of 2 still reported findings');
    expect(ending[0]).toMatchObject({
      deliverToRd: false,
      metadata: { autoReview: { round: 2, state: 'max_rounds' }, pullRequestId: pr.id },
    });
    expect(stub.requests.filter((r) => r.marker === url).every((r) => r.api === 'openai')).toBe(true);
  });

  it('shows the loop on the PR board and the Requirement page after a reload, and sets autoReview in the create and edit dialogs', async () => {
    expect(cleanId && cappedId).toBeTruthy();
    let browser: BrowserSession | undefined;
    try {
      browser = await launchBrowser();
      const { page } = browser;
      await page.goto(`${manager.origin}/?token=${manager.token}`);
      await page.waitForURL(`${manager.origin}/requirements`);
      await page.goto(`${manager.origin}/pull-requests`);
      const card = (name: string) =>
        page.getByTestId('pull-requests-board').locator('li.card', { hasText: name }).getByTestId('auto-review-state');
      for (const pass of ['first', 'reloaded']) {
        if (pass === 'reloaded') {
          await page.reload();
        }
        await card('org/repo#42').getByText('clean after 3 rounds').waitFor();
        await card('org/repo#52').getByText('Auto review stopped at 2/2 rounds').waitFor();
      }
      await page.goto(`${manager.origin}/requirements/${cleanId}`);
      await page
        .locator('am-pull-request-list')
        .getByTestId('auto-review-state')
        .getByText('clean after 3 rounds')
        .waitFor();

      // Create with a loop: the other provider chosen explicitly, four rounds.
      await page.goto(`${manager.origin}/requirements`);
      await page.getByTestId('new-requirement').click();
      await page.getByTestId('create-title').fill('Loop from the dialog');
      await page.getByTestId('create-auto-review').check();
      await page.getByTestId('create-auto-review-provider').selectOption('codex');
      await page.getByTestId('create-auto-review-rounds').fill('4');
      await page.getByTestId('create-submit').click();
      await page.waitForURL(/\/requirements\/req_/);
      const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
      expect((await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).autoReview).toEqual({
        maxRounds: 4,
        provider: 'codex',
      });

      // Edit after a reload: the dialog shows the stored loop; turning it off saves null.
      await page.reload();
      await page.getByTestId('edit').click();
      const dialog = page.getByTestId('create-dialog');
      await expect(dialog.getByTestId('create-auto-review').isChecked()).resolves.toBe(true);
      await expect(dialog.getByTestId('create-auto-review-rounds').inputValue()).resolves.toBe('4');
      await expect(dialog.getByTestId('create-auto-review-provider').inputValue()).resolves.toBe('codex');
      await dialog.getByTestId('create-auto-review').uncheck();
      await dialog.getByTestId('create-submit').click();
      await dialog.waitFor({ state: 'detached' });
      await until(
        'the loop to be off',
        async () =>
          (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).autoReview === null ||
          undefined,
      );
      expect(browser.errors).toEqual([]);
    } finally {
      await browser?.close();
    }
  });
});

/** Both real CLIs logged in to `stub` (one HOME: each reads its own configuration there). */
function bothClis(stub: ModelStub, label: string): NodeJS.ProcessEnv {
  const dir = fs.mkdtempSync(path.join('/var/tmp', `am-${label}-`));
  const [codex, claude] = REAL_AGENT_CLIS;
  return {
    ...codex.env(stub, dir),
    ...claude.env(stub, dir),
    CODE_FACTORY_CLAUDE_EXECUTABLE: claude.executable,
    CODE_FACTORY_CODEX_EXECUTABLE: codex.executable,
  };
}

describe('review loop and pushes seen on GitHub', () => {
  const TOKEN = 'ghp_fake_review_loop_token';
  let sandbox: Sandbox;
  let stub: ModelStub;
  let github: FakeGitHubServer;
  let manager: ManagerProcess;
  let events: SseConnection;

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    github = await FakeGitHubServer.start({ token: TOKEN });
    manager = await startManager({
      env: {
        ...bothClis(stub, 'review-loop-github'),
        CODE_FACTORY_GITHUB_API_URL: github.url,
        CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '1',
        GH_TOKEN: '',
        GITHUB_TOKEN: TOKEN,
      },
      sandbox,
    });
    events = await connectSse(`${manager.origin}/api/events`);
  });
  afterAll(async () => {
    events?.close();
    await manager?.stop();
    await github?.close();
    await stub?.close();
    sandbox?.cleanup();
  });

  const prOf = async (requirementId: string) =>
    (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId } } }))).items[0];
  const reviewsOf = async (pullRequestId: string) =>
    (await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId } } }))).items.reverse();
  const rdIdle = (id: string) =>
    until(
      `RD of ${id} to be idle`,
      async () =>
        (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 200 } } }))).items.every(
          (r) => r.status !== 'running',
        ) || undefined,
      120_000,
      200,
    );

  it('reviews a head pushed elsewhere, seen by the reconciler, once the RD run its GitHub message woke has ended', async () => {
    const fake = github.addPullRequest({
      baseBranch: 'main',
      headBranch: 'b62',
      number: 62,
      repository: 'org/repo',
      title: 'PR 62',
    });
    const firstHead = fake.headSha; // the fake's PR object moves on with push()
    const requirement = await ok(
      manager.api.POST('/api/requirements', {
        body: { autoReview: { maxRounds: 3 }, provider: 'claude-code', title: 'Pushed elsewhere' },
      }),
    );
    const url = 'https://github.com/org/repo/pull/62';
    // The reviewer's marker is its task line: the PR's URL changes to the fake's host once the
    // reconciler saw it, and the RD agent's GitHub message names that URL too.
    const reviewer = 'Review GitHub PR';
    stub.scriptFor(requirement.id, [
      {
        shell: `code-factory-cli pr register --url ${url} --title "PR 62" --base-branch main --head-branch b62 --head-sha ${firstHead} --status open`,
      },
      { text: 'Opened the PR.' },
      { text: 'CI will push the fix.' },
      { text: 'Noted the new head.' },
      { text: 'Thanks.' },
    ]);
    stub.scriptFor(reviewer, [
      { text: 'The retry loop never ends (src/retry.ts:12).\nREVIEW: FINDINGS' },
      { text: 'Fixed.\nREVIEW: NO FINDINGS' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Open the PR ${requirement.id}` },
    });

    await until(
      'the first round to find something',
      async () => (await prOf(requirement.id))?.autoReview.state === 'waiting_for_push' || undefined,
      180_000,
      300,
    );
    const pr = await prOf(requirement.id);
    expect(pr.autoReview).toMatchObject({ headSha: firstHead, lastOutcome: 'findings', provider: 'codex', round: 1 });
    // RD took the summary and rested without pushing; the push comes from elsewhere, seen by the reconciler.
    await until(
      'RD to take the summary',
      async () =>
        stub.requests.some((r) => r.marker === requirement.id && r.transcript.includes('The retry loop never ends')),
      120_000,
      200,
    );
    await rdIdle(requirement.id);
    const pushed = github.push('org/repo', 62);

    await until(
      'the loop to end clean',
      async () => (await prOf(requirement.id))?.autoReview.state === 'clean' || undefined,
      180_000,
      300,
    );
    expect((await prOf(requirement.id)).autoReview).toEqual({
      headSha: pushed,
      lastOutcome: 'no_findings',
      maxRounds: 3,
      provider: 'codex',
      round: 2,
      state: 'clean',
    });
    const reviews = await reviewsOf(pr.id);
    expect(reviews.map((r) => [r.requestedBy, r.provider, r.targetHeadSha, r.verdict])).toEqual([
      ['review_loop', 'codex', firstHead, 'findings'],
      ['review_loop', 'codex', pushed, 'no_findings'],
    ]);
    // The reconciler's "new head commit" message woke RD; the round began once that run had ended.
    const moved = events.events.findIndex(
      (e) => e.event === 'pull_request.updated' && (e.data.payload.pullRequest as PullRequest).headSha === pushed,
    );
    const round = events.events.findIndex(
      (e) => e.event === 'review_request.started' && (e.data.payload.reviewRequest as Review).id === reviews[1].id,
    );
    expect(moved).toBeGreaterThanOrEqual(0);
    expect(events.events[moved].data.actor).toMatchObject({ id: 'github.reconciler', kind: 'trigger' });
    const between = events.events
      .slice(moved, round)
      .filter(
        (e) =>
          (e.event === 'run.started' || e.event === 'run.succeeded') &&
          e.data.requirementId === requirement.id &&
          e.data.sessionId,
      );
    expect(between.map((e) => e.event)).toEqual(['run.started', 'run.succeeded']);
    expect(
      stub.requests.some((r) => r.marker === requirement.id && r.transcript.includes('has a new head commit')),
    ).toBe(true);
    await rdIdle(requirement.id);
  });
});

describe('review loop across a crash', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    env = { ...bothClis(stub, 'review-loop-crash'), GH_TOKEN: '', GITHUB_TOKEN: '' };
    manager = await startManager({ env, sandbox });
  });
  afterAll(async () => {
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  const prOf = async (requirementId: string) =>
    (await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId } } }))).items[0];
  const reviewsOf = async (pullRequestId: string) =>
    (await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId } } }))).items.reverse();
  const rdIdle = (id: string) =>
    until(
      `RD of ${id} to be idle`,
      async () =>
        (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 200 } } }))).items.every(
          (r) => r.status !== 'running',
        ) || undefined,
      120_000,
      200,
    );

  it('gives a round lost to a crash back, and never reviews that head twice after the restart', async () => {
    const requirement = await ok(
      manager.api.POST('/api/requirements', { body: { autoReview: {}, provider: 'codex', title: 'Crashy loop' } }),
    );
    stub.scriptFor(requirement.id, [
      {
        shell:
          'code-factory-cli pr register --url https://github.com/org/repo/pull/72 --title "PR 72" --base-branch main --head-branch b72 --head-sha cccc0001 --status open',
      },
      { text: 'Opened the PR.' },
      { text: 'Carrying on without a push.' },
    ]);
    // The first reviewer never answers: the manager dies under it.
    stub.scriptFor('Review GitHub PR', [
      { hang: true },
      { text: 'Manual: one thing in src/b.ts:9.\nREVIEW: FINDINGS' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Open the PR ${requirement.id}` },
    });
    await until(
      'the first round to run',
      async () => (await prOf(requirement.id))?.autoReview.state === 'reviewing' || undefined,
      120_000,
      200,
    );
    await until(
      'the reviewer to ask the model',
      async () => stub.requests.some((r) => r.marker === 'Review GitHub PR') || undefined,
      60_000,
      100,
    );
    await manager.kill9();
    manager = await startManager({ env, sandbox });

    const pr = await prOf(requirement.id);
    expect(pr.autoReview).toEqual({
      headSha: 'cccc0001',
      lastOutcome: 'failed',
      maxRounds: 3,
      provider: 'claude-code',
      round: 0,
      state: 'waiting_for_push',
    });
    expect((await reviewsOf(pr.id)).map((r) => [r.requestedBy, r.status, r.targetHeadSha, r.error])).toEqual([
      ['review_loop', 'failed', 'cccc0001', 'Agent Manager stopped while the review was running'],
    ]);

    // An RD run ends on the same head: the loop does not review it again (its receipt), so a person's review is free to run.
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: requirement.id } },
      body: { message: `Carry on ${requirement.id}` },
    });
    await until(
      'RD to carry on',
      async () =>
        stub.requests.some((r) => r.marker === requirement.id && r.transcript.includes('Carry on')) || undefined,
      120_000,
      200,
    );
    await rdIdle(requirement.id);
    const manual = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: pr.id } },
      body: { provider: 'claude-code' },
    });
    expect(manual.status).toBe(202);
    await until(
      'the manual review',
      async () => (await reviewsOf(pr.id)).at(-1)?.status === 'succeeded' || undefined,
      120_000,
      300,
    );
    expect((await reviewsOf(pr.id)).map((r) => [r.requestedBy, r.status, r.targetHeadSha])).toEqual([
      ['review_loop', 'failed', 'cccc0001'],
      ['human', 'succeeded', 'cccc0001'],
    ]);
    expect((await prOf(requirement.id)).autoReview).toMatchObject({ round: 0, state: 'waiting_for_push' });
    await rdIdle(requirement.id);

    // Turned off: at the next RD run's end the PR no longer waits for a push.
    expect(
      (
        await manager.api.PATCH('/api/requirements/{id}', {
          params: { path: { id: requirement.id } },
          body: { autoReview: null },
        })
      ).status,
    ).toBe(200);
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: requirement.id } },
      body: { message: `No more loop ${requirement.id}` },
    });
    await until(
      'the loop to be off',
      async () => (await prOf(requirement.id)).autoReview.state === 'off' || undefined,
      120_000,
      200,
    );
    expect((await prOf(requirement.id)).autoReview).toMatchObject({ headSha: 'cccc0001', round: 0, state: 'off' });
    await rdIdle(requirement.id);
  });
});
