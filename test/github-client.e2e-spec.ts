// The real GitHub client (Octokit + retry + throttling) against the fake GitHub server over HTTP.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Logger, LoggerService } from '@nestjs/common';

import { OctokitGitHubClient, createGitHubClient } from '@server/github/github-client';
import type { GitHubClientOptions } from '@server/github/github-transport';
import { GitHubError } from '@server/github/github.errors';
import { resolveGitHubToken } from '@server/github/github-token';
import {
  PullRequestFetchError,
  PullRequestResult,
  PullRequestSnapshot,
  PullRequestSummary,
  PullRequestSummaryResult,
  pullRequestKey,
} from '@server/forges/forge.types';

import { FakeGitHubServer, githubLikeGraphqlCost } from './support/fake-github-server';

const TOKEN = 'ghp_test_token_never_logged';
const REPO = 'Acme/Widgets';

class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  log = (m: unknown) => void this.lines.push(String(m));
  error = (m: unknown) => void this.lines.push(String(m));
  warn = (m: unknown) => void this.lines.push(String(m));
  debug = (m: unknown) => void this.lines.push(String(m));
  verbose = (m: unknown) => void this.lines.push(String(m));
}

function snapshot(result: PullRequestResult | undefined): PullRequestSnapshot {
  if (result?.kind !== 'snapshot') {
    throw new Error(`expected a snapshot, got ${JSON.stringify(result)}`);
  }
  return result;
}

function summary(result: PullRequestSummaryResult | undefined): PullRequestSummary {
  if (result?.kind !== 'summary') {
    throw new Error(`expected a summary, got ${JSON.stringify(result)}`);
  }
  return result;
}

function failure(result: PullRequestResult | PullRequestSummaryResult | undefined): PullRequestFetchError {
  if (result?.kind !== 'error') {
    throw new Error(`expected an error, got ${JSON.stringify(result)}`);
  }
  return result;
}

async function rejection(promise: Promise<unknown>): Promise<GitHubError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GitHubError);
  return error as GitHubError;
}

describe(OctokitGitHubClient.name, () => {
  let fake: FakeGitHubServer;
  const logs = new RecordingLogger();

  const client = (options: Partial<GitHubClientOptions> = {}) =>
    new OctokitGitHubClient({ baseUrl: fake.url, retryBaseDelayMs: 10, timeoutMs: 3_000, token: TOKEN, ...options });
  const refs = (count: number, first = 1) =>
    Array.from({ length: count }, (_, i) => ({ number: first + i, repository: REPO }));

  beforeAll(() => Logger.overrideLogger(logs));
  afterAll(() => {
    // The token must never reach the log, whatever happened.
    expect(logs.lines.filter((line) => line.includes(TOKEN))).toEqual([]);
    Logger.overrideLogger(new Logger());
  });
  beforeEach(async () => {
    fake = await FakeGitHubServer.start({ token: TOKEN });
  });
  afterEach(async () => {
    await fake.close().catch(() => undefined);
  });

  describe('fetchPullRequests', () => {
    it('reads many PRs with one GraphQL request per batch and reports the budget', async () => {
      refs(45).forEach((ref) => fake.addPullRequest(ref));
      const sut = client({ batchSize: 20 });

      const results = await sut.fetchPullRequests([...refs(45), { number: 3, repository: 'acme/widgets' }]);

      expect(results.size).toBe(45);
      expect([...results.values()].every((r) => r.kind === 'snapshot')).toBe(true);
      expect(snapshot(results.get('acme/widgets#45')).number).toBe(45);
      expect(fake.counts()).toMatchObject({ graphql: 3, rest: 0, total: 3 });
      expect(fake.requests.map((r) => r.pullRequests)).toEqual([20, 20, 5]);
      expect(fake.requests.every((r) => r.authorization === `token ${TOKEN}`)).toBe(true);
      expect(sut.rateLimit().graphql).toMatchObject({ lastCost: 1, limit: 5_000, remaining: 4_997 });
      expect(fake.remaining('graphql')).toBe(4_997);
    });

    it('maps state, branches, mergeability, comments, reviews, inline comments and checks', async () => {
      fake.addPullRequest({
        baseBranch: 'develop',
        headBranch: 'feat/x',
        isDraft: true,
        mergeable: 'CONFLICTING',
        number: 7,
        repository: REPO,
        title: 'Add X',
      });
      const comment = fake.addComment(REPO, 7, { author: 'alice', authorAssociation: 'MEMBER', body: 'Please rename' });
      fake.addComment(REPO, 7, { author: null, body: 'from a deleted account' });
      const review = fake.addReview(REPO, 7, { author: 'bob', body: 'Needs tests', state: 'CHANGES_REQUESTED' });
      fake.addReview(REPO, 7, { author: 'bob', body: 'draft, unsubmitted', state: 'PENDING' });
      const inline = fake.addReviewComment(REPO, 7, {
        author: 'carol',
        body: 'off by one',
        line: 42,
        path: 'src/a.ts',
      });
      fake.addReviewComment(REPO, 7, {
        author: 'dave',
        body: 'agreed',
        line: null,
        path: 'src/a.ts',
        threadId: inline.threadId,
      });
      const headSha = fake.push(REPO, 7, 'a'.repeat(40));
      fake.setCheckRun(REPO, 7, { conclusion: 'FAILURE', name: 'build', status: 'COMPLETED' });
      fake.setCheckRun(REPO, 7, { name: 'lint', status: 'IN_PROGRESS' });
      fake.setStatus(REPO, 7, {
        context: 'ci/legacy',
        description: 'tests failed',
        state: 'FAILURE',
        targetUrl: 'https://ci.example.test/1',
      });
      fake.addPullRequest({ number: 8, repository: REPO, state: 'MERGED' });
      fake.addPullRequest({ number: 9, repository: REPO, state: 'CLOSED' });

      const results = await client().fetchPullRequests(refs(3, 7));

      const pr = snapshot(results.get(pullRequestKey({ number: 7, repository: REPO })));
      expect(pr).toMatchObject({
        baseBranch: 'develop',
        checksState: 'FAILURE',
        headBranch: 'feat/x',
        headSha,
        isDraft: true,
        kind: 'snapshot',
        mergeable: 'UNKNOWN', // a push resets it
        number: 7,
        repository: REPO,
        state: 'open',
        status: 'draft',
        title: 'Add X',
        url: 'https://github.test/Acme/Widgets/pull/7',
      });
      expect(pr.comments).toEqual([
        {
          author: 'alice',
          authorAssociation: 'MEMBER',
          body: 'Please rename',
          createdAt: comment.createdAt,
          databaseId: comment.databaseId,
          id: comment.id,
          url: comment.url,
        },
        expect.objectContaining({ author: null, body: 'from a deleted account' }),
      ]);
      expect(pr.reviews).toEqual([
        expect.objectContaining({
          author: 'bob',
          body: 'Needs tests',
          id: review.id,
          state: 'CHANGES_REQUESTED',
          submittedAt: review.submittedAt,
        }),
      ]);
      expect(pr.reviewComments).toEqual([
        expect.objectContaining({
          author: 'carol',
          body: 'off by one',
          line: 42,
          path: 'src/a.ts',
          threadId: inline.threadId,
          url: inline.url,
        }),
        expect.objectContaining({ author: 'dave', body: 'agreed', line: null, threadId: inline.threadId }),
      ]);
      expect(pr.checkRuns).toEqual([
        {
          conclusion: 'FAILURE',
          id: expect.any(Number),
          name: 'build',
          status: 'COMPLETED',
          url: expect.stringMatching(/^https:\/\/ci\.example\.test\/runs\/\d+$/),
        },
        { conclusion: null, id: expect.any(Number), name: 'lint', status: 'IN_PROGRESS', url: expect.any(String) },
      ]);
      expect(pr.statuses).toEqual([
        { context: 'ci/legacy', description: 'tests failed', state: 'FAILURE', url: 'https://ci.example.test/1' },
      ]);
      expect(snapshot(results.get('acme/widgets#8'))).toMatchObject({ state: 'merged', status: 'merged' });
      expect(snapshot(results.get('acme/widgets#9'))).toMatchObject({
        checkRuns: [],
        checksState: null,
        state: 'closed',
        status: 'closed',
      });

      fake.update(REPO, 7, { isDraft: false, mergeable: 'MERGEABLE' });
      const later = snapshot(
        (await client().fetchPullRequests([{ number: 7, repository: REPO }])).get('acme/widgets#7'),
      );
      expect(later).toMatchObject({ mergeable: 'MERGEABLE', status: 'open' });
      expect(Date.parse(later.updatedAt)).toBeGreaterThan(Date.parse(pr.updatedAt));
    });

    it('gives a failing or missing PR its own error while the rest of the batch succeeds', async () => {
      refs(4).forEach((ref) => fake.addPullRequest(ref));
      fake.failPullRequest(REPO, 2, 'FORBIDDEN', 'Resource not accessible by integration');

      const results = await client().fetchPullRequests([
        ...refs(4),
        { number: 99, repository: 'acme/gone' },
        { number: 1, repository: 'not a repo' },
      ]);

      expect(fake.counts().graphql).toBe(1);
      expect(failure(results.get('acme/widgets#2'))).toMatchObject({
        code: 'forbidden',
        message: 'Resource not accessible by integration',
      });
      expect(failure(results.get('acme/gone#99')).code).toBe('not_found');
      expect(failure(results.get('not a repo#1')).code).toBe('not_found');
      expect([1, 3, 4].map((n) => results.get(`acme/widgets#${n}`)?.kind)).toEqual([
        'snapshot',
        'snapshot',
        'snapshot',
      ]);
      expect(fake.requests[0].pullRequests).toBe(5); // the invalid ref is never sent
    });

    it('retries 5xx answers and succeeds', async () => {
      fake.addPullRequest({ number: 1, repository: REPO });
      fake.failNext(2, 502);

      const results = await client().fetchPullRequests(refs(1));

      expect(results.get('acme/widgets#1')?.kind).toBe('snapshot');
      expect(fake.requests.map((r) => r.status)).toEqual([502, 502, 200]);
    });

    it('marks a batch the server keeps failing as failed and still reads the next batch', async () => {
      refs(2).forEach((ref) => fake.addPullRequest(ref));
      fake.failNext(3, 500);

      const results = await client({ batchSize: 1, retries: 2 }).fetchPullRequests(refs(2));

      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'failed', code: 'failed' });
      expect(results.get('acme/widgets#2')?.kind).toBe('snapshot');
      expect(fake.requests.map((r) => r.status)).toEqual([500, 500, 500, 200]);
    });

    it.each([403, 429] as const)('waits out a %i secondary rate limit for its Retry-After', async (status) => {
      fake.addPullRequest({ number: 1, repository: REPO });
      fake.secondaryRateLimitNext(1, { retryAfterSeconds: 1, status });

      const started = Date.now();
      const results = await client().fetchPullRequests(refs(1));

      expect(results.get('acme/widgets#1')?.kind).toBe('snapshot');
      expect(fake.requests.map((r) => r.status)).toEqual([status, 200]);
      expect(fake.requests[1].at - fake.requests[0].at).toBeGreaterThanOrEqual(950);
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it('gives up on a secondary limit that asks for a longer pause than allowed, and sends nothing more', async () => {
      refs(2).forEach((ref) => fake.addPullRequest(ref));
      fake.secondaryRateLimitNext(1, { retryAfterSeconds: 60 });

      const started = Date.now();
      const results = await client({ batchSize: 1, maxRetryAfterMs: 5_000 }).fetchPullRequests(refs(2));

      expect(Date.now() - started).toBeLessThan(2_000);
      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'rate_limited', code: 'skipped' });
      expect(failure(results.get('acme/widgets#2'))).toMatchObject({ cause: 'rate_limited', code: 'skipped' });
      expect(fake.counts().total).toBe(1);
    });

    it('fails fast when the primary budget resets later than it may wait, then refuses without asking', async () => {
      fake.addPullRequest({ number: 1, repository: REPO });
      fake.exhaust('graphql', 3_600);
      const sut = client({ maxRateLimitWaitMs: 5_000 });

      const first = failure((await sut.fetchPullRequests(refs(1))).get('acme/widgets#1'));
      expect(first).toMatchObject({ cause: 'rate_limited', code: 'skipped' });
      expect(sut.rateLimit().graphql).toMatchObject({ remaining: 0 });
      expect(Date.parse(sut.rateLimit().graphql!.resetAt) - Date.now()).toBeGreaterThan(3_500_000);

      const second = failure((await sut.fetchPullRequests(refs(1))).get('acme/widgets#1'));
      expect(second.cause).toBe('rate_limited');
      expect(fake.counts().graphql).toBe(1); // the second call never left the client
    });

    it('waits for a primary budget that resets soon enough', async () => {
      fake.addPullRequest({ number: 1, repository: REPO });
      fake.exhaust('graphql', 1);

      const started = Date.now();
      const results = await client({ maxRateLimitWaitMs: 10_000 }).fetchPullRequests(refs(1));

      expect(results.get('acme/widgets#1')?.kind).toBe('snapshot');
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(fake.counts().graphql).toBe(2);
    });

    it('bounds a slow answer by the timeout and does not retry it', async () => {
      refs(2).forEach((ref) => fake.addPullRequest(ref));
      fake.delayNext(1, 2_000);

      const started = Date.now();
      const results = await client({ batchSize: 1, timeoutMs: 300 }).fetchPullRequests(refs(2));

      expect(Date.now() - started).toBeLessThan(1_500);
      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'timeout', code: 'skipped' });
      expect(failure(results.get('acme/widgets#2')).cause).toBe('timeout');
      expect(fake.counts().graphql).toBe(1);
    });

    it('reports an unreachable server instead of hanging', async () => {
      await fake.close();

      const started = Date.now();
      const results = await client({ retries: 2 }).fetchPullRequests(refs(1));

      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'network', code: 'skipped' });
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it('reports a rejected token', async () => {
      fake.addPullRequest({ number: 1, repository: REPO });

      const results = await client({ token: 'wrong' }).fetchPullRequests(refs(1));

      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'unauthorized', code: 'skipped' });
      expect(fake.counts().total).toBe(1);
    });

    it('is not configured without a token and sends nothing', async () => {
      const sut = client({ token: null });

      expect(sut.configured).toBe(false);
      expect((await rejection(sut.fetchPullRequests(refs(1)))).code).toBe('not_configured');
      expect((await rejection(sut.getPullRequest('acme', 'widgets', 1))).code).toBe('not_configured');
      expect(fake.counts().total).toBe(0);
    });
  });

  describe('fetchPullRequestSummaries', () => {
    const fingerprints = (results: Map<string, PullRequestSummaryResult>) =>
      new Map([...results].map(([key, result]) => [key, summary(result).fingerprint]));
    /** Runs `change` without the updatedAt bump the fake's helpers make, to show the counts alone change the fingerprint. */
    const keepingUpdatedAt = (number: number, change: () => unknown) => {
      const before = fake.pullRequest(REPO, number).updatedAt;
      change();
      fake.pullRequest(REPO, number).updatedAt = before;
    };

    it('reads 100 PRs per GraphQL request, and charges a summary batch of 100 what a snapshot batch of 20 costs', async () => {
      await fake.close();
      fake = await FakeGitHubServer.start({ graphqlCost: githubLikeGraphqlCost, token: TOKEN });
      refs(250).forEach((ref) => fake.addPullRequest(ref));
      const sut = client();

      const results = await sut.fetchPullRequestSummaries(refs(250));

      expect(results.size).toBe(250);
      expect(summary(results.get('acme/widgets#250'))).toMatchObject({
        kind: 'summary',
        number: 250,
        repository: REPO,
        state: 'open',
        status: 'open',
      });
      expect(fake.requests.map((r) => [r.kind, r.query, r.pullRequests, r.cost])).toEqual([
        ['graphql', 'summary', 100, 5],
        ['graphql', 'summary', 100, 5],
        ['graphql', 'summary', 50, 3],
      ]);
      expect(sut.rateLimit().graphql).toMatchObject({ lastCost: 3, remaining: 5_000 - 13 });

      await sut.fetchPullRequests(refs(20));
      expect(fake.counts().byQuery).toEqual({ snapshot: { cost: 5, requests: 1 }, summary: { cost: 13, requests: 3 } });
    });

    it('gives identical fingerprints while nothing changes', async () => {
      refs(3).forEach((ref) => fake.addPullRequest(ref));
      fake.addComment(REPO, 1, { body: 'hello' });
      fake.addReviewComment(REPO, 1, { body: 'nit', path: 'a.ts' });
      fake.setCheckRun(REPO, 1, { name: 'build', status: 'IN_PROGRESS' });
      fake.setStatus(REPO, 1, { context: 'ci', state: 'PENDING' });
      const sut = client();

      const first = await sut.fetchPullRequestSummaries(refs(3));
      const second = await sut.fetchPullRequestSummaries(refs(3));

      expect(second).toEqual(first);
      expect(new Set(fingerprints(first).values()).size).toBe(3);
    });

    it('changes the fingerprint of exactly the PR that changed, for every kind of change', async () => {
      const changes: [string, (n: number) => unknown][] = [
        ['closed', (n) => fake.update(REPO, n, { state: 'CLOSED' })],
        ['merged', (n) => fake.update(REPO, n, { state: 'MERGED' })],
        ['marked ready', (n) => fake.update(REPO, n, { isDraft: false })],
        ['pushed', (n) => fake.push(REPO, n)],
        // GitHub computes mergeability later, without bumping updatedAt.
        ['became conflicting', (n) => (fake.pullRequest(REPO, n).mergeable = 'CONFLICTING')],
        ['commented', (n) => keepingUpdatedAt(n, () => fake.addComment(REPO, n, { body: 'more' }))],
        ['reviewed', (n) => keepingUpdatedAt(n, () => fake.addReview(REPO, n, { state: 'APPROVED' }))],
        [
          'inline comment',
          (n) => keepingUpdatedAt(n, () => fake.addReviewComment(REPO, n, { body: 'here', path: 'b.ts' })),
        ],
        [
          'inline reply',
          (n) =>
            fake.addReviewComment(REPO, n, {
              body: 'done',
              path: 'a.ts',
              threadId: fake.pullRequest(REPO, n).reviewThreads[0].id,
            }),
        ],
        ['check run added', (n) => fake.setCheckRun(REPO, n, { name: 'lint', status: 'QUEUED' })],
        ['check run started', (n) => fake.setCheckRun(REPO, n, { name: 'build', status: 'IN_PROGRESS' })],
        ['check run concluded', (n) => fake.setCheckRun(REPO, n, { conclusion: 'SUCCESS', name: 'build' })],
        ['check run re-concluded', (n) => fake.setCheckRun(REPO, n, { conclusion: 'NEUTRAL', name: 'done' })],
        ['status added', (n) => fake.setStatus(REPO, n, { context: 'ci/other', state: 'PENDING' })],
        ['status changed', (n) => fake.setStatus(REPO, n, { context: 'ci', state: 'SUCCESS' })],
      ];
      const count = changes.length + 3; // and three PRs that do not change
      refs(count).forEach((ref) => {
        fake.addPullRequest({ ...ref, isDraft: true });
        fake.addReviewComment(REPO, ref.number, { body: 'nit', path: 'a.ts' });
        fake.setCheckRun(REPO, ref.number, { name: 'build', status: 'QUEUED' });
        fake.setCheckRun(REPO, ref.number, { conclusion: 'SUCCESS', name: 'done' });
        fake.setStatus(REPO, ref.number, { context: 'ci', state: 'PENDING' });
      });
      const sut = client();
      const before = fingerprints(await sut.fetchPullRequestSummaries(refs(count)));

      changes.forEach(([, change], i) => change(i + 1));
      const after = fingerprints(await sut.fetchPullRequestSummaries(refs(count)));

      const changed = (number: number) => before.get(`acme/widgets#${number}`) !== after.get(`acme/widgets#${number}`);
      expect(refs(count).map(({ number }) => [changes[number - 1]?.[0] ?? 'unchanged', changed(number)])).toEqual([
        ...changes.map(([name]) => [name, true]),
        ['unchanged', false],
        ['unchanged', false],
        ['unchanged', false],
      ]);
      expect(fake.counts().byQuery.summary.requests).toBe(2);
    });

    it('gives a failing or missing PR its own error while the rest of the batch succeeds', async () => {
      refs(3).forEach((ref) => fake.addPullRequest(ref));
      fake.failPullRequest(REPO, 2, 'FORBIDDEN', 'Resource not accessible by integration');

      const results = await client().fetchPullRequestSummaries([
        ...refs(3),
        { number: 99, repository: 'acme/gone' },
        { number: 0, repository: REPO },
      ]);

      expect(fake.requests.map((r) => [r.query, r.pullRequests])).toEqual([['summary', 4]]);
      expect(failure(results.get('acme/widgets#2'))).toMatchObject({
        code: 'forbidden',
        message: 'Resource not accessible by integration',
      });
      expect(failure(results.get('acme/gone#99')).code).toBe('not_found');
      expect(failure(results.get('acme/widgets#0')).code).toBe('not_found');
      expect([1, 3].map((n) => results.get(`acme/widgets#${n}`)?.kind)).toEqual(['summary', 'summary']);
    });

    it('marks a batch the server keeps failing as failed and still reads the next one', async () => {
      refs(2).forEach((ref) => fake.addPullRequest(ref));
      fake.failNext(3, 500);

      const results = await client({ retries: 2, summaryBatchSize: 1 }).fetchPullRequestSummaries(refs(2));

      expect(failure(results.get('acme/widgets#1'))).toMatchObject({ cause: 'failed', code: 'failed' });
      expect(results.get('acme/widgets#2')?.kind).toBe('summary');
      expect(fake.requests.map((r) => r.status)).toEqual([500, 500, 500, 200]);
    });

    it('stops at a spent budget, marks the rest skipped, then refuses without asking', async () => {
      refs(3).forEach((ref) => fake.addPullRequest(ref));
      const sut = client({ maxRateLimitWaitMs: 5_000, summaryBatchSize: 2 });
      fake.exhaust('graphql', 3_600);

      const first = await sut.fetchPullRequestSummaries(refs(3));
      const second = await sut.fetchPullRequestSummaries(refs(3));

      expect([...first.values()].map((r) => failure(r))).toEqual(
        refs(3).map((ref) => expect.objectContaining({ cause: 'rate_limited', code: 'skipped', ref })),
      );
      expect(failure(second.get('acme/widgets#3')).cause).toBe('rate_limited');
      expect(fake.counts().graphql).toBe(1);
      expect((await rejection(client({ token: null }).fetchPullRequestSummaries(refs(1)))).code).toBe('not_configured');
      expect(fake.counts().total).toBe(1);
    });
  });

  describe('getPullRequest', () => {
    it('reads the REST fields and revalidates with the ETag (a free 304)', async () => {
      fake.addPullRequest({ baseBranch: 'main', headBranch: 'feat/y', number: 5, repository: REPO, title: 'Y' });
      const sut = client();

      const first = await sut.getPullRequest('acme', 'widgets', 5);
      const second = await sut.getPullRequest('acme', 'widgets', 5);
      fake.update(REPO, 5, { mergeable: 'CONFLICTING', state: 'CLOSED', title: 'Y2' });
      const third = await sut.getPullRequest('acme', 'widgets', 5);

      expect(first).toEqual({
        baseBranch: 'main',
        headBranch: 'feat/y',
        headSha: fake.pullRequest(REPO, 5).headSha,
        isDraft: false,
        mergeable: true,
        mergeableState: 'clean',
        number: 5,
        repository: REPO,
        state: 'open',
        status: 'open',
        title: 'Y',
        updatedAt: expect.any(String),
        url: 'https://github.test/Acme/Widgets/pull/5',
      });
      expect(second).toEqual(first);
      expect(third).toMatchObject({
        mergeable: false,
        mergeableState: 'dirty',
        state: 'closed',
        status: 'closed',
        title: 'Y2',
      });
      expect(fake.requests.map((r) => [r.status, r.cost])).toEqual([
        [200, 1],
        [304, 0],
        [200, 1],
      ]);
      expect(sut.rateLimit().core).toMatchObject({ limit: 5_000, remaining: 4_998 });
    });

    it('throws typed errors: not found, rate limited, timeout, unreachable', async () => {
      const sut = client({ retries: 1, timeoutMs: 300 });
      expect((await rejection(sut.getPullRequest('acme', 'widgets', 404))).code).toBe('not_found');

      fake.addPullRequest({ number: 1, repository: REPO });
      fake.hangNext(1);
      expect((await rejection(sut.getPullRequest('acme', 'widgets', 1))).code).toBe('timeout');

      fake.exhaust('core', 3_600);
      const limited = await rejection(sut.getPullRequest('acme', 'widgets', 1));
      expect(limited.code).toBe('rate_limited');
      expect(Date.parse(limited.details.resetAt!) - Date.now()).toBeGreaterThan(3_500_000);

      await fake.close();
      expect((await rejection(client({ retries: 1 }).getPullRequest('acme', 'widgets', 1))).code).toBe('network');
    });
  });

  it('refreshes the budgets from /rate_limit without spending them', async () => {
    fake.exhaust('core', 120);
    const sut = client();

    const status = await sut.refreshRateLimit();

    expect(status.core).toMatchObject({ limit: 5_000, remaining: 0 });
    expect(status.graphql).toMatchObject({ limit: 5_000, remaining: 5_000 });
    expect(fake.counts()).toMatchObject({ rate_limit: 1, total: 1 });
  });

  it('speaks to GitHub Enterprise Server paths (/api/v3, /api/graphql)', async () => {
    fake.addPullRequest({ number: 1, repository: REPO });
    const sut = client({ baseUrl: `${fake.enterpriseUrl}/` });

    const results = await sut.fetchPullRequests(refs(1));
    await sut.getPullRequest('acme', 'widgets', 1);

    expect(results.get('acme/widgets#1')?.kind).toBe('snapshot');
    expect(fake.requests.map((r) => r.path)).toEqual(['/api/graphql', '/api/v3/repos/acme/widgets/pulls/1']);
    expect(fake.unhandled).toEqual([]);
  });

  it('opens a pull request, and answers the open one when GitHub says it already exists (422)', async () => {
    const sut = client();
    const input = {
      base: 'main',
      body: 'What it does.\n\nRequirement req_1',
      head: 'agent/feature-1',
      title: 'Add the feature',
    };

    const first = await sut.createPullRequest('Acme', 'Widgets', input);
    const again = await sut.createPullRequest('Acme', 'Widgets', { ...input, title: 'Add the feature, again' });

    expect(first).toMatchObject({
      created: true,
      pullRequest: {
        baseBranch: 'main',
        headBranch: 'agent/feature-1',
        number: 1,
        repository: REPO,
        status: 'open',
        title: 'Add the feature',
      },
    });
    expect(again).toEqual({ created: false, pullRequest: first.pullRequest });
    expect(fake.pullRequest(REPO, 1)).toMatchObject({
      body: 'What it does.\n\nRequirement req_1',
      headSha: first.pullRequest.headSha,
    });
    expect(fake.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'POST /repos/Acme/Widgets/pulls 201',
      'POST /repos/Acme/Widgets/pulls 422',
      'GET /repos/Acme/Widgets/pulls 200',
    ]);
    expect(fake.requests.every((r) => r.authorization === `token ${TOKEN}`)).toBe(true);
    // Another base is another pull request; a head GitHub does not have is refused with its reason.
    expect((await sut.createPullRequest('Acme', 'Widgets', { ...input, base: 'release' })).pullRequest.number).toBe(2);
    fake.removePullRequest(REPO, 1);
    fake.addPullRequest({
      baseBranch: 'main',
      headBranch: 'agent/feature-1',
      number: 1,
      repository: REPO,
      state: 'CLOSED',
    });
    expect((await sut.createPullRequest('Acme', 'Widgets', input)).pullRequest.number).toBe(3);
    const unpushed = await FakeGitHubServer.start({ branchHead: () => null, token: TOKEN });
    try {
      const refused = await rejection(client({ baseUrl: unpushed.url }).createPullRequest('Acme', 'Widgets', input));
      expect(refused).toMatchObject({ code: 'failed', details: { status: 422 } });
      expect(refused.message).toContain('Validation Failed');
      expect(unpushed.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 422']);
    } finally {
      await unpushed.close();
    }
  });

  it('gives git the token only as an Authorization header line, and nothing without a token', () => {
    expect(client().gitAuthorization()).toBe(
      `Authorization: Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`,
    );
    expect(client({ token: null }).gitAuthorization()).toBeNull();
  });
});

describe(resolveGitHubToken.name, () => {
  let bin: string;

  beforeAll(() => {
    bin = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-gh-'));
    // A stand-in `gh` that prints a token naming its arguments, so the test sees how it was called.
    fs.writeFileSync(
      path.join(bin, 'gh'),
      '#!/bin/sh\nif [ -n "$GH_FAIL" ]; then exit 1; fi\nif [ -n "$GH_SLEEP" ]; then sleep "$GH_SLEEP"; fi\necho "gho_from_gh:$*"\n',
      {
        mode: 0o755,
      },
    );
  });
  afterAll(() => fs.rmSync(bin, { force: true, recursive: true }));

  const env = (extra: Record<string, string> = {}) => ({ PATH: `${bin}:/usr/bin:/bin`, ...extra });

  it('prefers GITHUB_TOKEN, then GH_TOKEN, then `gh auth token`', async () => {
    await expect(resolveGitHubToken({ env: env({ GH_TOKEN: 'b', GITHUB_TOKEN: 'a' }) })).resolves.toEqual({
      source: 'GITHUB_TOKEN',
      token: 'a',
    });
    await expect(resolveGitHubToken({ env: env({ GH_TOKEN: 'b', GITHUB_TOKEN: ' ' }) })).resolves.toEqual({
      source: 'GH_TOKEN',
      token: 'b',
    });
    await expect(resolveGitHubToken({ env: env() })).resolves.toEqual({
      source: 'gh',
      token: 'gho_from_gh:auth token',
    });
    await expect(resolveGitHubToken({ env: env(), hostname: 'ghe.example.test' })).resolves.toEqual({
      source: 'gh',
      token: 'gho_from_gh:auth token --hostname ghe.example.test',
    });
  });

  it('gives null when gh is absent, not logged in, or too slow', async () => {
    await expect(resolveGitHubToken({ env: { PATH: '/nonexistent' } })).resolves.toBeNull();
    await expect(resolveGitHubToken({ env: env({ GH_FAIL: '1' }) })).resolves.toBeNull();
    const started = Date.now();
    await expect(resolveGitHubToken({ env: env({ GH_SLEEP: '5' }), timeoutMs: 300 })).resolves.toBeNull();
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('builds a client with the resolved token (createGitHubClient)', async () => {
    const fake = await FakeGitHubServer.start({ token: 'from-gh-token-env' });
    try {
      fake.addPullRequest({ number: 1, repository: REPO });
      const sut = await createGitHubClient({ baseUrl: fake.url, env: env({ GH_TOKEN: 'from-gh-token-env' }) });
      const none = await createGitHubClient({ baseUrl: fake.url, env: { PATH: '/nonexistent' } });

      expect(sut).toMatchObject({ configured: true, tokenSource: 'GH_TOKEN' });
      expect((await sut.fetchPullRequests([{ number: 1, repository: REPO }])).get('acme/widgets#1')?.kind).toBe(
        'snapshot',
      );
      expect(none).toMatchObject({ configured: false, tokenSource: null });
    } finally {
      await fake.close();
    }
  });
});
