import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { signWebhookBody } from '@server/github/webhook-signature';
import { PullRequestReconciler } from '@server/forges/pull-request-reconciler.service';
import { RunningManager, startManager } from '@server/manager';

import { FakeClock } from './support/fake-clock';
import { FakeGitHubServer } from './support/fake-github-server';
import { apiClient, ok } from './support/api';
import { type Json, registerToken, sendUntyped } from './support/http';
import { IDLE_AGENT, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

const TOKEN = 'ghp_fake_reconciler_token';
const SECRET = 'webhook-secret-for-tests';
const REPO = 'Org/Repo';

interface Message {
  author: string;
  body: string;
  code: string | null;
  deliverToRd: boolean;
  source: string | null;
  triggerId: string | null;
  metadata: Record<string, Json> | null;
}

/**
 * The PR reconciler and the webhook against the fake GitHub server, with the real client, on
 * a real in-process server. Polling is off (interval 0): each test reconciles when it wants,
 * so every count is exact; one test turns the interval on.
 */
describe('GitHub reconciler', () => {
  let sandbox: Sandbox;
  let github: FakeGitHubServer;
  let manager: RunningManager;
  /** The typed client with the workspace token. */
  const api = () => apiClient(manager.url);
  let clock: FakeClock;
  let requirement: { id: string; session: { id: string } };
  let runToken: string;
  const savedToken = process.env.GITHUB_TOKEN;

  const start = async () => {
    // In the file, not a launch override: a test turns polling on through PATCH later.
    const configPath = path.join(sandbox.workspace, '..', 'agent-manager.config.json');
    if (!fs.existsSync(configPath)) {
      fs.writeFileSync(
        configPath,
        JSON.stringify({ githubApiUrl: github.url, pullRequestReconcileIntervalSeconds: 0 }),
      );
    }
    manager = await startManager({
      clock,
      configPath,
      env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  };
  const reconcile = () => manager.app.get(PullRequestReconciler).reconcile();
  const conversation = async (id = requirement.id): Promise<Message[]> =>
    (await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))).items;
  const github_ = async (id = requirement.id) => (await conversation(id)).filter((m) => m.source === 'github');
  /** Registers `number` as the agent would, matching what the fake says. */
  const register = async (
    number: number,
    overrides: Partial<Schemas['RegisterPullRequestDto']> = {},
    owner = requirement,
    token = runToken,
  ) => {
    const pr = github.pullRequest(REPO, number);
    const body: Schemas['RegisterPullRequestDto'] = {
      baseBranch: pr.baseBranch,
      headBranch: pr.headBranch,
      headSha: pr.headSha,
      number,
      repository: REPO,
      requirementId: owner.id,
      status: pr.isDraft ? 'draft' : 'open',
      title: pr.title,
      url: `https://github.com/${REPO}/pull/${number}`,
      ...overrides,
    };
    return ok(apiClient(manager.url, { auth: token }).POST('/api/agent/pull-requests', { body }), 200);
  };
  const newRequirement = async (title: string) => {
    const created = await ok(api().POST('/api/requirements', { body: { provider: 'codex', title } }));
    await api().POST('/api/requirements/{id}/start', { params: { path: { id: created.id } }, body: {} });
    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: created.id, runId: `run_${title.replace(/\W/g, '_')}`, sessionId: created.session.id });
    return { requirement: created, token };
  };
  const webhook = (event: string, payload: object | string, signature?: string) => {
    const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    // A delivery is signed over its exact bytes: untyped on purpose.
    return sendUntyped(
      manager.url,
      'POST',
      '/api/github/webhook',
      body,
      {
        'Content-Type': 'application/json',
        'X-GitHub-Event': event,
        'X-Hub-Signature-256': signature ?? signWebhookBody(SECRET, body),
      },
      { auth: false },
    );
  };

  beforeAll(async () => {
    process.env.GITHUB_TOKEN = TOKEN;
    sandbox = makeSandbox();
    clock = new FakeClock();
    github = await FakeGitHubServer.start({ token: TOKEN });
    await start();
    const first = await newRequirement('tracked work');
    requirement = first.requirement;
    runToken = first.token;
  });

  afterAll(async () => {
    await manager?.stop();
    await github?.close();
    sandbox?.cleanup();
    process.env.GITHUB_TOKEN = savedToken;
  });

  it('sets a baseline on first observation: old comments, reviews, CI failures and conflicts are not replayed', async () => {
    github.addPullRequest({ number: 1, repository: REPO });
    const before = new Date(Date.now() - 60_000);
    github.addComment(REPO, 1, { at: before, author: 'alice', body: 'an old comment' });
    github.addReview(REPO, 1, { at: before, author: 'bob', body: 'an old review', state: 'CHANGES_REQUESTED' });
    github.addReviewComment(REPO, 1, {
      at: before,
      author: 'bob',
      body: 'an old inline comment',
      line: 3,
      path: 'src/a.ts',
    });
    github.setCheckRun(REPO, 1, { conclusion: 'FAILURE', name: 'build', status: 'COMPLETED' });
    github.update(REPO, 1, { mergeable: 'CONFLICTING' });
    await register(1);
    const report = await reconcile();
    expect(report).toMatchObject({ deliveries: 0, failed: 0, fetched: 1, pullRequests: 1 });
    expect(await github_()).toEqual([]);
    // Unchanged: only the cheap summary is read.
    github.resetCounts();
    expect(await reconcile()).toMatchObject({ deliveries: 0, fetched: 0, pullRequests: 1 });
    expect(github.counts().byQuery).toMatchObject({ snapshot: { requests: 0 }, summary: { requests: 1 } });
  });

  it('delivers at the baseline what was written after the registration, and only that', async () => {
    github.addPullRequest({ number: 11, repository: REPO });
    github.addComment(REPO, 11, { at: new Date(Date.now() - 60_000), author: 'alice', body: 'written before' });
    const own = await newRequirement('reviewed early');
    await register(11, {}, own.requirement, own.token);
    // A bot's review and a person's comment within the first interval, before the reconciler looked.
    github.addReview(REPO, 11, { author: 'coderabbit', body: 'a bot review after registering', state: 'COMMENTED' });
    github.addComment(REPO, 11, { author: 'carol', body: 'a comment after registering' });
    expect(await reconcile()).toMatchObject({ deliveries: 2, failed: 0 });
    const bodies = (await github_(own.requirement.id)).map((m) => m.body);
    expect(bodies).toHaveLength(2);
    expect(bodies).toEqual(
      expect.arrayContaining([
        expect.stringContaining('a bot review after registering'),
        expect.stringContaining('a comment after registering'),
      ]),
    );
    // Told once: the next look delivers nothing again, and the older comment never.
    github.resetCounts();
    expect(await reconcile()).toMatchObject({ deliveries: 0 });
    expect((await github_(own.requirement.id)).some((m) => m.body.includes('written before'))).toBe(false);
    // Merged: final, no longer polled (the tests below count the PRs still watched).
    github.update(REPO, 11, { state: 'MERGED' });
    await reconcile();
  });

  it('corrects a stale status at the baseline, and reports lifecycle and head changes as status messages', async () => {
    github.addPullRequest({ isDraft: true, number: 2, repository: REPO });
    const pr = await register(2, { status: 'open' }); // the agent said open; GitHub says draft
    const events = await connectSse(`${manager.url}/api/events`);
    await reconcile();
    let messages = await github_();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      author: 'system',
      deliverToRd: true,
      metadata: { previousStatus: 'open', pullRequestId: pr.id, status: 'draft' },
      triggerId: 'github.pull-request.status',
    });
    expect(messages[0].body).toContain('is now a draft (was open)');
    expect(messages[0].body).toContain('already recorded');

    github.update(REPO, 2, { isDraft: false });
    await reconcile();
    const sha = github.push(REPO, 2);
    await reconcile();
    github.update(REPO, 2, { state: 'MERGED' });
    await reconcile();
    messages = await github_();
    expect(messages.map((m) => m.metadata?.status)).toEqual(['draft', 'open', 'open', 'merged']);
    expect(messages[2].body).toContain(`new head commit ${sha.slice(0, 12)}`);
    const stored = (
      await ok(api().GET('/api/pull-requests', { params: { query: { requirementId: requirement.id } } }))
    ).items.find((p: { id: string }) => p.id === pr.id);
    expect(stored).toMatchObject({ headSha: sha, status: 'merged' });
    const updates = events.events.filter(
      (e) => e.event === 'pull_request.updated' && (e.data.payload as Json).pullRequest.id === pr.id,
    );
    expect(updates.map((e) => (e.data.payload as Json).pullRequest.status)).toEqual([
      'draft',
      'open',
      'open',
      'merged',
    ]);
    events.close();
    // Merged is final: no longer polled.
    const before = github.counts().total;
    const report = await reconcile();
    expect(report.pullRequests).toBe(1); // PR 1 only
    expect(github.counts().total - before).toBe(1);
  });

  it("delivers new comments, reviews and inline comments as untrusted reviewer messages, but not the agents' own", async () => {
    github.addPullRequest({ number: 3, repository: REPO });
    await register(3);
    await reconcile();
    github.addComment(REPO, 3, { author: 'alice', body: 'Please split this function.' });
    github.addReview(REPO, 3, { author: 'bob', body: '', state: 'APPROVED' });
    github.addReviewComment(REPO, 3, { author: 'carol', body: 'Off by one here.', line: 42, path: 'src/flush.ts' });
    github.addComment(REPO, 3, { author: 'agent-bot', body: 'Fixed in abc123. <!-- agent-manager:rd -->' });
    await reconcile();
    const messages = (await github_()).filter((m) => m.metadata?.number === 3);
    expect(messages.map((m) => m.metadata?.commentKind).sort()).toEqual([
      'issue-comment',
      'issue-comment',
      'review',
      'review-comment',
    ]);
    expect(messages.every((m) => m.triggerId === 'github.pull-request.comment')).toBe(true);
    const byKind = (kind: string) => messages.filter((m) => m.metadata?.commentKind === kind);
    expect(byKind('issue-comment').map((m) => [m.deliverToRd, m.metadata?.author])).toEqual([
      [true, 'alice'],
      [false, 'agent-bot'],
    ]);
    expect(byKind('review')).toEqual([
      expect.objectContaining({
        deliverToRd: true,
        metadata: expect.objectContaining({ author: 'bob', reviewState: 'APPROVED', untrusted: true }),
      }),
    ]);
    expect(byKind('review-comment')[0].body).toContain('inline comment on src/flush.ts:42');
    for (const message of messages) {
      expect(message.author).toBe('reviewer');
      expect(message.body).toContain('untrusted external feedback');
    }
    // Nothing new: nothing more.
    await reconcile();
    expect((await github_()).filter((m) => m.metadata?.number === 3)).toHaveLength(4);
  });

  it('reports a check that newly failed, errored or timed out, and a new conflict, once each', async () => {
    github.addPullRequest({ number: 4, repository: REPO });
    await register(4);
    await reconcile();
    github.setCheckRun(REPO, 4, { name: 'lint', status: 'IN_PROGRESS' });
    github.setCheckRun(REPO, 4, { conclusion: 'SUCCESS', name: 'unit', status: 'COMPLETED' });
    await reconcile();
    expect((await github_()).filter((m) => m.metadata?.number === 4)).toEqual([]);
    github.setCheckRun(REPO, 4, { conclusion: 'FAILURE', name: 'lint', status: 'COMPLETED' });
    github.setCheckRun(REPO, 4, { conclusion: 'TIMED_OUT', name: 'e2e', status: 'COMPLETED' });
    github.setStatus(REPO, 4, { context: 'ci/legacy', state: 'ERROR' });
    github.update(REPO, 4, { mergeable: 'CONFLICTING' });
    await reconcile();
    await reconcile();
    const messages = (await github_()).filter((m) => m.metadata?.number === 4);
    expect(messages.map((m) => [m.triggerId, m.metadata?.check ?? null]).sort()).toEqual(
      [
        ['github.pull-request.ci-failure', 'ci/legacy'],
        ['github.pull-request.ci-failure', 'e2e'],
        ['github.pull-request.ci-failure', 'lint'],
        ['github.pull-request.conflict', null],
      ].sort(),
    );
    expect(messages.every((m) => m.author === 'system' && m.deliverToRd)).toBe(true);
  });

  it('opens ci_failed for a CI failure no agent works on (its Requirement stopped), and a start clears it (issue 47)', async () => {
    const { requirement: stopped, token } = await newRequirement('stopped while CI runs');
    github.addPullRequest({ number: 40, repository: REPO });
    await register(40, {}, stopped, token);
    await reconcile(); // the baseline
    await ok(
      api().POST('/api/requirements/{id}/interrupt', { body: { mode: 'stop' }, params: { path: { id: stopped.id } } }),
    );
    const read = () => ok(api().GET('/api/requirements/{id}', { params: { path: { id: stopped.id } } }));
    await until('the stop', async () => ((await read()).session.state !== 'running' ? true : undefined));
    github.setCheckRun(REPO, 40, { conclusion: 'FAILURE', name: 'lint', status: 'COMPLETED' });
    await reconcile();
    const ciFailed = async () =>
      (await ok(api().GET('/api/attention'))).items.find(
        (i) => i.requirementId === stopped.id && i.reason === 'ci_failed',
      );
    const item = await until('ci_failed opened', ciFailed);
    expect(item.summary).toMatch(/^GitHub CI: "lint" failure on .*#40/);
    expect((await read()).attention.map((i) => i.reason)).toContain('ci_failed');
    // A start delivers it to the agent: no longer the person's to act on.
    await ok(api().POST('/api/requirements/{id}/start', { body: {}, params: { path: { id: stopped.id } } }), 202);
    await until('ci_failed cleared', async () => ((await ciFailed()) === undefined ? true : undefined));
  });

  it('keeps going when one PR cannot be read, and survives 5xx and rate limits', async () => {
    github.addPullRequest({ number: 5, repository: REPO });
    github.addPullRequest({ number: 6, repository: REPO });
    await register(5);
    await register(6);
    await reconcile();
    github.failPullRequest(REPO, 5, 'FORBIDDEN', 'Resource not accessible by integration');
    github.addComment(REPO, 5, { author: 'alice', body: 'on five' });
    github.addComment(REPO, 6, { author: 'alice', body: 'on six' });
    const report = await reconcile();
    expect(report.failed).toBe(1);
    const bodies = () =>
      github_().then((ms) => ms.filter((m) => [5, 6].includes(m.metadata?.number)).map((m) => m.metadata?.number));
    expect(await bodies()).toEqual([6]);
    github.failPullRequest(REPO, 5, null);
    github.failNext(1, 502);
    github.secondaryRateLimitNext(1, { retryAfterSeconds: 1, status: 429 });
    expect(await reconcile()).toMatchObject({ failed: 0 });
    expect(await bodies()).toEqual([6, 5]);
  });

  it('delivers nothing twice across a restart; records without waking once the Requirement is done', async () => {
    const before = (await conversation()).length;
    await manager.stop();
    await start();
    await reconcile();
    // Nothing from GitHub twice: the one new message is the manager's own, that its stop cut the run short (issue 26 §8).
    expect((await conversation()).slice(before).map((m) => m.code)).toEqual(['run.manager_stopped']);
    // The restart ended the old run (and its credential): the agent works on in a new one.
    runToken = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: requirement.id, runId: 'run_after_restart', sessionId: requirement.session.id });

    const { requirement: finished, token } = await newRequirement('finished work');
    github.addPullRequest({ number: 7, repository: REPO });
    await register(7, {}, finished, token);
    await reconcile();
    await api().POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: finished.id } },
      body: { mode: 'stop' },
    });
    await until(
      'waiting',
      async () =>
        (await ok(api().GET('/api/requirements/{id}', { params: { path: { id: finished.id } } }))).status ===
          'waiting_confirmation' || undefined,
    );
    await api().POST('/api/requirements/{id}/confirm', { params: { path: { id: finished.id } } });
    github.addComment(REPO, 7, { author: 'alice', body: 'late feedback' });
    await reconcile();
    const [late] = await github_(finished.id);
    expect(late).toMatchObject({ deliverToRd: false, metadata: { author: 'alice' } });
    expect(await ok(api().GET('/api/requirements/{id}', { params: { path: { id: finished.id } } }))).toMatchObject({
      session: { state: 'completed' },
      status: 'done',
    });
  });

  it('notices a closed PR being reopened (closed PRs are re-checked hourly)', async () => {
    github.addPullRequest({ number: 8, repository: REPO });
    await register(8);
    await reconcile();
    github.update(REPO, 8, { state: 'CLOSED' });
    await reconcile();
    github.update(REPO, 8, { state: 'OPEN' });
    await reconcile();
    const statuses = async () =>
      (await github_()).filter((m) => m.metadata?.number === 8).map((m) => m.metadata?.status);
    expect(await statuses()).toEqual(['closed']);
    clock.advance(61 * 60 * 1000);
    await reconcile();
    expect(await statuses()).toEqual(['closed', 'open']);
  });

  it('webhook: off by default (404), refuses bad signatures (401, nothing processed), and a signed event delivers at once, once', async () => {
    github.addPullRequest({ number: 9, repository: REPO });
    await register(9);
    await reconcile();
    const payload = {
      action: 'created',
      comment: { body: 'via webhook' },
      issue: { number: 9, pull_request: {} },
      repository: { full_name: REPO },
    };
    expect((await webhook('issue_comment', payload)).status).toBe(404);

    const patched = await api().PATCH('/api/configuration', { body: { githubWebhookSecret: SECRET } });
    expect(patched.data).toMatchObject({ githubWebhookSecretConfigured: true, values: { githubWebhookSecret: null } });
    expect((await ok(api().GET('/api/configuration'))).effective.githubWebhookSecret).toBeNull();

    github.addComment(REPO, 9, { author: 'dave', body: 'via webhook' });
    const refused = (signature: string) =>
      expectRefused(
        manager.runtime.paths.dataDirectory,
        () => webhook('issue_comment', payload, signature),
        401,
        'invalid_signature',
      );
    const asked = github.requests.length;
    await refused('sha256=' + '0'.repeat(64));
    await refused('sha1=abc');
    await refused(signWebhookBody('another-secret', JSON.stringify(payload)));
    // A delivery would have started a reconcile of #9 while its request was handled: once the
    // reconciler is idle, nothing was asked of GitHub and nothing was delivered.
    await manager.app.get(PullRequestReconciler).settled();
    expect(github.requests.slice(asked)).toEqual([]);
    expect((await github_()).filter((m) => m.metadata?.number === 9)).toEqual([]);

    const accepted = await webhook('issue_comment', payload);
    expect(accepted.status).toBe(202);
    expect(accepted.json).toEqual({ accepted: true, event: 'issue_comment', pullRequests: 1 });
    await until(
      'the webhook delivery',
      async () => (await github_()).some((m) => m.metadata?.number === 9) || undefined,
    );
    // The same event again, and a poll: still one message.
    await webhook('issue_comment', payload);
    await manager.app.get(PullRequestReconciler).settled();
    await reconcile();
    expect((await github_()).filter((m) => m.metadata?.number === 9)).toHaveLength(1);
    expect((await webhook('ping', { zen: 'Keep it logically awesome.' })).json).toEqual({
      accepted: true,
      event: 'ping',
      pullRequests: 0,
    });
    const check = {
      check_run: { conclusion: 'failure', head_sha: github.pullRequest(REPO, 9).headSha, pull_requests: [] },
      repository: { full_name: REPO },
    };
    expect((await webhook('check_run', check)).json).toMatchObject({ pullRequests: 1 });
    await expectRefused(
      manager.runtime.paths.dataDirectory,
      () => webhook('issue_comment', '{not json'),
      400,
      'invalid_json',
    );
    await expectRefused(
      manager.runtime.paths.dataDirectory,
      () => webhook('issue_comment', '{not json', signWebhookBody(SECRET, '{not jsoN')),
      401,
      'invalid_signature',
    );
  });

  it('polls on its own once the interval is set, and ticks never overlap', async () => {
    github.addPullRequest({ number: 10, repository: REPO });
    await register(10);
    const reconciler = manager.app.get(PullRequestReconciler);
    await reconciler.settled(); // the webhook's last fetch; the next tick is PR 10's baseline
    const [a, b] = [reconciler.reconcile(), reconciler.reconcile()];
    expect(a).toBe(b);
    await a;
    github.addComment(REPO, 10, { author: 'erin', body: 'polled' });
    await api().PATCH('/api/configuration', { body: { pullRequestReconcileIntervalSeconds: 1 } });
    await until(
      'the poll to deliver',
      async () => (await github_()).some((m) => m.metadata?.number === 10) || undefined,
      15_000,
      100,
    );
    await api().PATCH('/api/configuration', { body: { pullRequestReconcileIntervalSeconds: 0 } });
  });
});
