// A fake GitHub for tests and benchmarks: one real HTTP server on 127.0.0.1 (ephemeral port) that
// serves what the manager's GitHub client uses, at github.com paths and at GitHub Enterprise paths:
//
//   POST /graphql, /api/graphql                          the batched pull-request queries, snapshot
//                                                        or summary (answers the aliases in its
//                                                        variables: o<i>, n<i>, p<i>)
//   GET  /repos/:owner/:repo/pulls/:number (+ /api/v3)   one PR, with ETag / If-None-Match → 304
//   POST /repos/:owner/:repo/pulls (+ /api/v3)           opens a PR (422 when one is open for that
//                                                        head and base, or the head is unknown)
//   GET  /repos/:owner/:repo/pulls?head=&base=&state=    the PRs that match, newest first
//   GET  /repos/:owner/:repo/issues/:number (+ /api/v3)  one issue (a PR answers too, with
//                                                        `pull_request`, as GitHub's do)
//   GET  /repos/:owner/:repo/issues/:number/comments     its comments, oldest first (page, per_page;
//                                                        a Link header when there is a next page)
//   GET  /repos/:owner/:repo/issues?state=&labels=&page=  a page of issues and PRs, newest first (Link);
//        …&since=&sort=updated&direction=asc              those changed at or after `since`, oldest change
//                                                        first, with an ETag (If-None-Match → a free 304)
//   GET  /repos/:owner/:repo/issues/comments?since=       every issue's comments changed since, oldest first
//   POST /repos/:owner/:repo/issues/:number/comments     writes a comment (as the token's user, octocat)
//   PATCH /repos/:owner/:repo/issues/:number             closes or reopens it ({state, state_reason})
//   GET  /repos/:owner/:repo/issues/:number/events       its `labeled` events (who added which label)
//   GET  /repos/:owner/:repo/collaborators/:user/permission   a login's permission (404: a stranger)
//   GET  /search/issues?q=repo:o/r is:issue is:open label:"x" words   the search's items (Link)
//   GET  /rate_limit (+ /api/v3)                         the budgets (free, like GitHub's)
//   GET  /user (+ /api/v3)                               the token's user, its OAuth scopes in
//                                                        x-oauth-scopes (what `doctor` reads)
//
// Tests mutate the state (PRs, comments, reviews, checks) and inject faults (a failing PR, 5xx,
// secondary and primary rate limits, slow answers, a closed port). Every request is recorded with
// its kind and GraphQL cost so a scenario can report requests per hour. Answers carry GitHub's
// x-ratelimit-* headers from a simulated budget (5,000 per hour per resource by default).
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeMergeable = 'MERGEABLE' | 'CONFLICTING' | 'UNKNOWN';
export type FakeState = 'OPEN' | 'CLOSED' | 'MERGED';

interface FakeAuthored {
  id: string;
  databaseId: number;
  author: string | null;
  authorAssociation: string;
  body: string;
  url: string;
}
export interface FakeComment extends FakeAuthored {
  createdAt: string;
}
export interface FakeReview extends FakeAuthored {
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED' | 'PENDING';
  submittedAt: string | null;
}
export interface FakeReviewComment extends FakeAuthored {
  path: string;
  line: number | null;
  createdAt: string;
}
export interface FakeReviewThread {
  id: string;
  comments: FakeReviewComment[];
}
export interface FakeCheckRun {
  databaseId: number;
  name: string;
  status: 'QUEUED' | 'IN_PROGRESS' | 'COMPLETED' | 'WAITING' | 'PENDING' | 'REQUESTED';
  conclusion: string | null;
  detailsUrl: string | null;
  url: string;
}
export interface FakeStatus {
  context: string;
  state: 'ERROR' | 'EXPECTED' | 'FAILURE' | 'PENDING' | 'SUCCESS';
  description: string | null;
  targetUrl: string | null;
}

/** One pull request's state. Mutate it directly or through the server's helpers (which bump updatedAt). */
export interface FakePullRequest {
  owner: string;
  repo: string;
  number: number;
  title: string;
  /** The description (Markdown), as opened. */
  body: string;
  state: FakeState;
  isDraft: boolean;
  headSha: string;
  headBranch: string;
  baseBranch: string;
  mergeable: FakeMergeable;
  updatedAt: string;
  comments: FakeComment[];
  reviews: FakeReview[];
  reviewThreads: FakeReviewThread[];
  /** Checks and statuses of the head commit (a push starts with none). */
  checkRuns: FakeCheckRun[];
  statuses: FakeStatus[];
  /** Set by failPullRequest: the GraphQL error its alias gets instead of data. */
  failure: { type: string; message: string } | null;
}

export type FakeRequestKind = 'graphql' | 'rest' | 'rate_limit' | 'other';

/** An issue as a test writes it; its comments are numbered from 1 in order. */
export interface FakeIssue {
  repository: string;
  number: number;
  title: string;
  body: string | null;
  labels: string[];
  author: string | null;
  state: 'open' | 'closed';
  comments: Array<{ author: string | null; body: string; createdAt: string }>;
  /** GitHub's `updated_at` (whole seconds): moves with every change, a comment's included. */
  updatedAt: string;
  /** The author's relation to the repository (default OWNER). */
  authorAssociation: string;
  /** Who added which label, in order (its labels at creation: its author, as an issue form does). */
  labelEvents: Array<{ actor: string | null; label: string }>;
}
/** Which batch query a GraphQL request was: full snapshots or change-detection summaries. */
export type FakeGraphqlQuery = 'snapshot' | 'summary';

export interface FakeRequest {
  kind: FakeRequestKind;
  method: string;
  path: string;
  status: number;
  /** Pull requests asked for (GraphQL aliases; 1 for the REST PR endpoint). */
  pullRequests: number;
  /** GraphQL requests only (when the body was a query): which batch query it was. */
  query?: FakeGraphqlQuery;
  /** Budget points charged (0 for a 304, /rate_limit and injected faults that GitHub does not charge). */
  cost: number;
  authorization: string | undefined;
  at: number;
}

export type FakeFault =
  | { kind: 'status'; status: number; message?: string }
  | { kind: 'secondary'; status: 403 | 429; retryAfterSeconds: number | null }
  | { kind: 'delay'; ms: number }
  | { kind: 'hang' };

interface Budget {
  limit: number;
  used: number;
  resetAt: number; // epoch ms
}

export interface FakeGitHubOptions {
  /** When set, requests must send it (`token X` / `Bearer X`), else 401. */
  token?: string;
  /** Points per hour per resource (core, graphql). */
  limit?: number;
  /** Budget points a GraphQL query costs; default 1 per query (GitHub: ≈ 1 per 100 connections requested, min 1). */
  graphqlCost?: (pullRequests: number, query: FakeGraphqlQuery) => number;
  /** `GET /user`'s x-oauth-scopes header (a classic token's scopes); null: none (a fine-grained token). Default "repo". */
  scopes?: string | null;
  /**
   * The commit a branch of a repository points at, for opening a PR (GitHub reads its own copy of
   * the pushed branch): null when the branch does not exist there (422). Default: a made-up SHA.
   */
  branchHead?: (repository: string, branch: string) => string | null;
}

const HOUR = 3_600_000;

/**
 * Connections each batch query asks for per PR, each counting one request per parent node whatever
 * its `first`/`last` (GitHub's documented formula). Snapshot: comments, reviews, threads, the last
 * commit, its checks, and the comments of each of up to 20 threads = 25. Summary: comments,
 * reviews, threads, the last commit and its checks, all `first: 0` / `last: 1` = 5.
 */
export const GITHUB_CONNECTIONS_PER_PULL_REQUEST: Record<FakeGraphqlQuery, number> = { snapshot: 25, summary: 5 };

/**
 * GitHub's documented cost of the client's batch queries, for scenarios that want realistic budget
 * figures: the requests for every connection, divided by 100, rounded, at least 1. A snapshot batch
 * of 20 PRs costs 5 points, a summary batch of 100 PRs 5 points (of 50: 3; of 20: 1).
 */
export const githubLikeGraphqlCost = (pullRequests: number, query: FakeGraphqlQuery = 'snapshot'): number =>
  Math.max(1, Math.round((pullRequests * GITHUB_CONNECTIONS_PER_PULL_REQUEST[query]) / 100));

export class FakeGitHubServer {
  readonly requests: FakeRequest[] = [];
  /** Requests no route served (answered 404): should stay empty. */
  readonly unhandled: { method: string; path: string }[] = [];
  /** Faults applied to the next requests in order (any kind unless `only` says otherwise). */
  private readonly faults: { fault: FakeFault; only?: FakeRequestKind; match?: { method: string; path: string } }[] =
    [];
  private readonly pulls = new Map<string, FakePullRequest>();
  private readonly issues = new Map<string, FakeIssue>();
  /** Logins' permission on every repository (the token's user, octocat, is its admin). */
  readonly permissions = new Map<string, string>([
    ['octocat', 'admin'],
    ['maintainer', 'write'],
  ]);
  private readonly budgets: Record<'core' | 'graphql', Budget>;
  private readonly sockets = new Set<import('node:net').Socket>();
  private nextId = 1000;
  private port = 0;

  private constructor(
    private readonly server: http.Server,
    private readonly options: FakeGitHubOptions,
  ) {
    const limit = options.limit ?? 5_000;
    this.budgets = {
      core: { limit, resetAt: Date.now() + HOUR, used: 0 },
      graphql: { limit, resetAt: Date.now() + HOUR, used: 0 },
    };
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(options: FakeGitHubOptions = {}): Promise<FakeGitHubServer> {
    const server = http.createServer();
    const fake = new FakeGitHubServer(server, options);
    server.on('request', (req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake.port = (server.address() as AddressInfo).port;
    return fake;
  }

  /** The REST root as a github.com client sees it (GraphQL at `${url}/graphql`). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The REST root as a GitHub Enterprise Server client sees it (GraphQL at /api/graphql). */
  get enterpriseUrl(): string {
    return `${this.url}/api/v3`;
  }

  /** Stops listening and drops open connections: later requests get "connection refused". */
  async close(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- state -------------------------------------------------------------------------------

  addPullRequest(
    init: { repository: string; number: number } & Partial<Omit<FakePullRequest, 'owner' | 'repo' | 'number'>>,
  ): FakePullRequest {
    const [owner, repo] = init.repository.split('/');
    const { repository: _repository, ...rest } = init;
    const pr: FakePullRequest = {
      baseBranch: 'main',
      body: '',
      checkRuns: [],
      comments: [],
      failure: null,
      headBranch: `feature/${init.number}`,
      headSha: sha(`${init.repository}#${init.number}:0`),
      isDraft: false,
      mergeable: 'MERGEABLE',
      owner,
      repo,
      reviewThreads: [],
      reviews: [],
      state: 'OPEN',
      statuses: [],
      title: `Pull request ${init.number}`,
      updatedAt: new Date().toISOString(),
      ...rest,
      number: init.number,
    };
    this.pulls.set(keyOf(init.repository, init.number), pr);
    return pr;
  }

  /** The PR's live state (throws when absent). */
  pullRequest(repository: string, number: number): FakePullRequest {
    const pr = this.pulls.get(keyOf(repository, number));
    if (!pr) {
      throw new Error(`fake GitHub has no ${repository}#${number}`);
    }
    return pr;
  }

  addIssue(init: Partial<FakeIssue> & { repository: string; number: number; title: string }): FakeIssue {
    const issue: FakeIssue = {
      author: 'octocat',
      body: '',
      comments: [],
      labels: [],
      state: 'open',
      updatedAt: githubNow(),
      authorAssociation: 'OWNER',
      labelEvents: [],
      ...init,
    };
    issue.labelEvents = init.labelEvents ?? issue.labels.map((label) => ({ actor: issue.author, label }));
    this.issues.set(keyOf(init.repository, init.number), issue);
    return issue;
  }

  /** The issue's live state (throws when absent). */
  issue(repository: string, number: number): FakeIssue {
    const issue = this.issues.get(keyOf(repository, number));
    if (!issue) {
      throw new Error(`fake GitHub has no issue ${repository}#${number}`);
    }
    return issue;
  }

  /** Someone comments on an issue now (it changes: its `updated_at` moves). */
  commentOnIssue(repository: string, number: number, author: string | null, body: string): void {
    const issue = this.issue(repository, number);
    issue.comments.push({ author, body, createdAt: githubNow() });
    issue.updatedAt = githubNow();
  }

  /** Someone (`by`, default a maintainer) changes an issue now: closes it, relabels it, retitles it. */
  updateIssue(
    repository: string,
    number: number,
    patch: Partial<Pick<FakeIssue, 'state' | 'labels' | 'title'>>,
    by = 'maintainer',
  ): void {
    const issue = this.issue(repository, number);
    for (const label of (patch.labels ?? []).filter((l) => !issue.labels.includes(l))) {
      issue.labelEvents.push({ actor: by, label });
    }
    Object.assign(issue, patch, { updatedAt: githubNow() });
  }

  removePullRequest(repository: string, number: number): void {
    this.pulls.delete(keyOf(repository, number));
  }

  update(
    repository: string,
    number: number,
    patch: Partial<Pick<FakePullRequest, 'title' | 'state' | 'isDraft' | 'mergeable' | 'baseBranch' | 'headBranch'>>,
  ): FakePullRequest {
    const pr = Object.assign(this.pullRequest(repository, number), patch);
    return this.touch(pr);
  }

  /** A new head commit: new SHA (given or derived), no checks or statuses yet, mergeability UNKNOWN. */
  push(repository: string, number: number, headSha?: string): string {
    const pr = this.pullRequest(repository, number);
    pr.headSha = headSha ?? sha(`${pr.headSha}+`);
    pr.checkRuns = [];
    pr.statuses = [];
    pr.mergeable = 'UNKNOWN';
    this.touch(pr);
    return pr.headSha;
  }

  addComment(
    repository: string,
    number: number,
    init: { author?: string | null; body: string; authorAssociation?: string; at?: Date },
  ): FakeComment {
    const pr = this.pullRequest(repository, number);
    const databaseId = this.nextId++;
    const comment: FakeComment = {
      ...this.authored(pr, 'IC', databaseId, `#issuecomment-${databaseId}`, init),
      createdAt: githubTime(init.at),
    };
    pr.comments.push(comment);
    this.touch(pr);
    return comment;
  }

  addReview(
    repository: string,
    number: number,
    init: { author?: string | null; body?: string; state: FakeReview['state']; authorAssociation?: string; at?: Date },
  ): FakeReview {
    const pr = this.pullRequest(repository, number);
    const databaseId = this.nextId++;
    const review: FakeReview = {
      ...this.authored(pr, 'PRR', databaseId, `#pullrequestreview-${databaseId}`, { body: '', ...init }),
      state: init.state,
      submittedAt: init.state === 'PENDING' ? null : githubTime(init.at),
    };
    pr.reviews.push(review);
    this.touch(pr);
    return review;
  }

  /** An inline comment: in a new thread, or as a reply in `threadId`. Returns the comment and its thread. */
  addReviewComment(
    repository: string,
    number: number,
    init: {
      author?: string | null;
      body: string;
      path: string;
      line?: number | null;
      threadId?: string;
      authorAssociation?: string;
      at?: Date;
    },
  ): FakeReviewComment & { threadId: string } {
    const pr = this.pullRequest(repository, number);
    let thread = init.threadId ? pr.reviewThreads.find((t) => t.id === init.threadId) : undefined;
    if (!thread) {
      thread = { comments: [], id: `PRRT_${this.nextId++}` };
      pr.reviewThreads.push(thread);
    }
    const databaseId = this.nextId++;
    const comment: FakeReviewComment = {
      ...this.authored(pr, 'PRRC', databaseId, `#discussion_r${databaseId}`, init),
      createdAt: githubTime(init.at),
      line: init.line === undefined ? 1 : init.line,
      path: init.path,
    };
    thread.comments.push(comment);
    this.touch(pr);
    return { ...comment, threadId: thread.id };
  }

  /** Adds or replaces (by name) a check run on the head commit. */
  setCheckRun(
    repository: string,
    number: number,
    init: { name: string; status?: FakeCheckRun['status']; conclusion?: string | null; detailsUrl?: string | null },
  ): FakeCheckRun {
    const pr = this.pullRequest(repository, number);
    const existing = pr.checkRuns.find((c) => c.name === init.name);
    const databaseId = existing?.databaseId ?? this.nextId++;
    const run: FakeCheckRun = {
      conclusion: init.conclusion ?? null,
      databaseId,
      detailsUrl: init.detailsUrl ?? `https://ci.example.test/runs/${databaseId}`,
      name: init.name,
      status: init.status ?? (init.conclusion ? 'COMPLETED' : 'QUEUED'),
      url: `https://github.test/${pr.owner}/${pr.repo}/runs/${databaseId}`,
    };
    pr.checkRuns = [...pr.checkRuns.filter((c) => c.name !== init.name), run];
    return run;
  }

  /** Adds or replaces (by context) a commit status on the head commit. */
  setStatus(
    repository: string,
    number: number,
    init: { context: string; state: FakeStatus['state']; description?: string | null; targetUrl?: string | null },
  ): FakeStatus {
    const pr = this.pullRequest(repository, number);
    const status: FakeStatus = {
      context: init.context,
      description: init.description ?? null,
      state: init.state,
      targetUrl: init.targetUrl ?? null,
    };
    pr.statuses = [...pr.statuses.filter((s) => s.context !== init.context), status];
    return status;
  }

  // ---- faults ------------------------------------------------------------------------------

  /** The PR's alias gets a GraphQL error (NOT_FOUND, FORBIDDEN, or anything) until cleared with null. */
  failPullRequest(
    repository: string,
    number: number,
    type: string | null = 'NOT_FOUND',
    message = `Could not resolve to a PullRequest with the number of ${number}.`,
  ): void {
    this.pullRequest(repository, number).failure = type ? { message, type } : null;
  }

  /** The next `count` requests (of `only` kind, and `match`ing, if given) answer `status` (default 502). */
  failNext(count: number, status = 502, only?: FakeRequestKind, match?: { method: string; path: string }): void {
    for (let i = 0; i < count; i++) {
      this.faults.push({ fault: { kind: 'status', status }, match, only });
    }
  }

  /** The next `count` requests hit a secondary rate limit: 403 or 429, "secondary rate limit", Retry-After. */
  secondaryRateLimitNext(
    count: number,
    { retryAfterSeconds = 1, status = 403 }: { retryAfterSeconds?: number | null; status?: 403 | 429 } = {},
    only?: FakeRequestKind,
  ): void {
    for (let i = 0; i < count; i++) {
      this.faults.push({ fault: { kind: 'secondary', retryAfterSeconds, status }, only });
    }
  }

  /** The next `count` requests wait `ms` before answering (nothing is sent meanwhile). */
  delayNext(count: number, ms: number, only?: FakeRequestKind): void {
    for (let i = 0; i < count; i++) {
      this.faults.push({ fault: { kind: 'delay', ms }, only });
    }
  }

  /** The next `count` requests are never answered (until the client gives up or the server closes). */
  hangNext(count: number, only?: FakeRequestKind): void {
    for (let i = 0; i < count; i++) {
      this.faults.push({ fault: { kind: 'hang' }, only });
    }
  }

  /** Spends a resource's primary budget until `resetInSeconds` from now. */
  exhaust(resource: 'core' | 'graphql', resetInSeconds: number): void {
    const budget = this.budgets[resource];
    budget.used = budget.limit;
    budget.resetAt = Date.now() + resetInSeconds * 1000;
  }

  remaining(resource: 'core' | 'graphql'): number {
    const budget = this.budget(resource);
    return Math.max(0, budget.limit - budget.used);
  }

  // ---- counting ----------------------------------------------------------------------------

  /** Requests by kind (all statuses), GraphQL budget points spent, and both per batch query. */
  counts(): Record<FakeRequestKind, number> & {
    total: number;
    graphqlCost: number;
    byQuery: Record<FakeGraphqlQuery, { requests: number; cost: number }>;
  } {
    const byQuery = { snapshot: { cost: 0, requests: 0 }, summary: { cost: 0, requests: 0 } };
    const counts = {
      byQuery,
      graphql: 0,
      graphqlCost: 0,
      other: 0,
      rate_limit: 0,
      rest: 0,
      total: this.requests.length,
    };
    for (const request of this.requests) {
      counts[request.kind]++;
      counts.graphqlCost += request.kind === 'graphql' ? request.cost : 0;
      if (request.query) {
        byQuery[request.query].requests++;
        byQuery[request.query].cost += request.cost;
      }
    }
    return counts;
  }

  resetCounts(): void {
    this.requests.length = 0;
  }

  // ---- HTTP --------------------------------------------------------------------------------

  /** GitHub's answer to a REST call past the core budget. */
  private rateLimited(send: (status: number, body: unknown, headers?: Record<string, string>) => void): void {
    send(
      403,
      {
        documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
        message: 'API rate limit exceeded for user ID 1.',
      },
      this.rateHeaders('core'),
    );
  }

  /** A page of the issue list (PRs among them, as GitHub's list has them) or of a search's results. */
  private answerIssueList(
    list: RegExpExecArray | null,
    query: URLSearchParams,
    ifNoneMatch: string | undefined,
    record: FakeRequest,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): void {
    if (!this.charge('core', 1, record)) {
      return this.rateLimited(send);
    }
    let repository: string;
    let state = query.get('state') ?? 'open';
    let labels = (query.get('labels') ?? '').split(',').filter((l) => l !== '');
    let words: string[] = [];
    let withPulls = true;
    if (list) {
      repository = `${list[1]}/${list[2]}`;
    } else {
      // q=repo:o/r is:issue is:open label:"x" words…
      const q = query.get('q') ?? '';
      repository = /(?:^|\s)repo:(\S+)/.exec(q)?.[1] ?? '';
      withPulls = !/(?:^|\s)is:issue\b/.test(q);
      state = /(?:^|\s)is:(open|closed)\b/.exec(q)?.[1] ?? 'all';
      labels = [...q.matchAll(/label:"([^"]*)"/g)].map((m) => m[1]);
      words = q
        .replace(/label:"[^"]*"/g, ' ')
        .split(/\s+/)
        .filter((w) => w !== '' && !/^(repo|is):/.test(w))
        .map((w) => w.toLowerCase());
    }
    const since = list ? query.get('since') : null;
    const byUpdate = list !== null && query.get('sort') === 'updated';
    const issues = [...this.issues.values()]
      .filter((i) => i.repository.toLowerCase() === repository.toLowerCase())
      .filter((i) => since === null || Date.parse(i.updatedAt) >= Date.parse(since))
      .filter((i) => state === 'all' || i.state === state)
      // GitHub matches labels whatever their case.
      .filter((i) => labels.every((l) => i.labels.some((own) => own.toLowerCase() === l.toLowerCase())))
      .filter((i) => words.every((w) => `${i.title} ${i.body ?? ''}`.toLowerCase().includes(w)))
      .map((i) => ({
        author_association: i.authorAssociation,
        body: i.body,
        comments: i.comments.length,
        created_at: '2026-01-01T00:00:00Z',
        html_url: `${this.url}/${i.repository}/issues/${i.number}`,
        labels: i.labels.map((name) => ({ name })),
        number: i.number,
        state: i.state,
        title: i.title,
        updated_at: i.updatedAt,
        user: i.author === null ? null : { login: i.author },
      }));
    const pulls =
      withPulls && since === null && labels.length === 0 && words.length === 0 && state !== 'closed'
        ? [...this.pulls.values()]
            .filter((pr) => `${pr.owner}/${pr.repo}`.toLowerCase() === repository.toLowerCase())
            .map((pr) => ({
              body: pr.body ?? '',
              created_at: '2026-01-01T00:00:00Z',
              html_url: `${this.url}/${pr.owner}/${pr.repo}/pull/${pr.number}`,
              labels: [],
              number: pr.number,
              pull_request: { url: `${this.url}/repos/${pr.owner}/${pr.repo}/pulls/${pr.number}` },
              state: 'open',
              title: pr.title,
              user: { login: 'octocat' },
            }))
        : [];
    const all = byUpdate
      ? [...issues].sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || a.number - b.number)
      : [...issues, ...pulls].sort((a, b) => b.number - a.number);
    if (byUpdate && query.get('direction') !== 'asc') {
      all.reverse();
    }
    const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
    const page = Math.max(1, Number(query.get('page') ?? 1));
    const slice = all.slice((page - 1) * perPage, page * perPage);
    const link: Record<string, string> =
      page * perPage < all.length
        ? { link: `<${this.url}/next?page=${page + 1}&per_page=${perPage}>; rel="next"` }
        : {};
    const body = list ? slice : { incomplete_results: false, items: slice, total_count: all.length };
    const etag = `"${createHash('sha1')
      .update(JSON.stringify([body, link]))
      .digest('hex')}"`;
    if (list && ifNoneMatch === etag) {
      this.budgets.core.used--; // GitHub does not charge a 304
      record.cost = 0;
      return send(304, undefined, { etag, ...this.rateHeaders('core') });
    }
    return send(200, body, { etag, ...this.rateHeaders('core'), ...link });
  }

  /** GET an issue or a page of its comments; a pull request is an issue too (GitHub's REST says so with `pull_request`). */
  private answerIssue(
    match: RegExpExecArray,
    query: URLSearchParams,
    record: FakeRequest,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): void {
    if (!this.charge('core', 1, record)) {
      return this.rateLimited(send);
    }
    const [, owner, repo, number, comments] = match;
    const repository = `${owner}/${repo}`;
    const issue = this.issues.get(keyOf(repository, Number(number)));
    const pr = this.pulls.get(keyOf(repository, Number(number)));
    const html = `${this.url}/${repository}/issues/${number}`;
    if (!issue && !pr) {
      return send(
        404,
        { documentation_url: 'https://docs.github.com/rest/issues/issues#get-an-issue', message: 'Not Found' },
        this.rateHeaders('core'),
      );
    }
    if (comments) {
      const since = query.get('since');
      const all = (issue?.comments ?? [])
        .map((c, i) => ({ ...c, id: Number(number) * 1000 + i + 1 }))
        .filter((c) => since === null || Date.parse(c.createdAt) >= Date.parse(since));
      const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
      const page = Math.max(1, Number(query.get('page') ?? 1));
      const slice = all.slice((page - 1) * perPage, page * perPage).map((c) => {
        const id = c.id;
        return {
          body: c.body,
          created_at: c.createdAt,
          html_url: `${html}#issuecomment-${id}`,
          id,
          updated_at: c.createdAt,
          user: c.author === null ? null : { login: c.author },
        };
      });
      const next = page * perPage < all.length;
      return send(200, slice, {
        ...this.rateHeaders('core'),
        ...(next
          ? {
              link: `<${this.url}/repos/${repository}/issues/${number}/comments?page=${page + 1}&per_page=${perPage}>; rel="next"`,
            }
          : {}),
      });
    }
    if (!issue) {
      return send(
        200,
        {
          body: pr!.body ?? '',
          created_at: '2026-01-01T00:00:00Z',
          html_url: `${this.url}/${repository}/pull/${number}`,
          labels: [],
          number: Number(number),
          pull_request: { url: `${this.url}/repos/${repository}/pulls/${number}` },
          state: 'open',
          title: pr!.title,
          user: { login: 'octocat' },
        },
        this.rateHeaders('core'),
      );
    }
    return send(
      200,
      {
        author_association: issue.authorAssociation,
        body: issue.body,
        comments: issue.comments.length,
        created_at: '2026-01-01T00:00:00Z',
        html_url: html,
        labels: issue.labels.map((name) => ({ name })),
        number: issue.number,
        state: issue.state,
        title: issue.title,
        updated_at: issue.updatedAt,
        user: issue.author === null ? null : { login: issue.author },
      },
      this.rateHeaders('core'),
    );
  }

  /** POST a comment on an issue, or PATCH its state: what a write-back does. */
  private writeIssue(
    match: RegExpExecArray,
    method: string,
    raw: string,
    record: FakeRequest,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): void {
    if (!this.charge('core', 1, record)) {
      return this.rateLimited(send);
    }
    const [, owner, repo, number, comments] = match;
    const repository = `${owner}/${repo}`;
    const issue = this.issues.get(keyOf(repository, Number(number)));
    if (!issue) {
      return send(404, { message: 'Not Found' }, this.rateHeaders('core'));
    }
    let input: { body?: unknown; state?: unknown };
    try {
      input = JSON.parse(raw) as typeof input;
    } catch {
      return send(400, { message: 'Problems parsing JSON' });
    }
    if (comments && method === 'POST') {
      if (typeof input.body !== 'string' || input.body === '') {
        return send(422, { message: 'Validation Failed', errors: [{ field: 'body', code: 'missing_field' }] });
      }
      this.commentOnIssue(repository, Number(number), 'octocat', input.body);
      const id = Number(number) * 1000 + issue.comments.length;
      return send(
        201,
        { body: input.body, html_url: `${this.url}/${repository}/issues/${number}#issuecomment-${id}`, id },
        this.rateHeaders('core'),
      );
    }
    if (!comments && method === 'PATCH') {
      if (input.state === 'open' || input.state === 'closed') {
        this.updateIssue(repository, Number(number), { state: input.state });
      }
      return send(200, { number: issue.number, state: issue.state }, this.rateHeaders('core'));
    }
    return send(404, { message: 'Not Found' });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    const kind: FakeRequestKind =
      method === 'POST' && /^(\/api)?\/graphql$/.test(path)
        ? 'graphql'
        : /^(\/api\/v3)?\/rate_limit$/.test(path)
          ? 'rate_limit'
          : /^(\/api\/v3)?\/repos\//.test(path)
            ? 'rest'
            : 'other';
    const record: FakeRequest = {
      at: Date.now(),
      authorization: req.headers.authorization,
      cost: 0,
      kind,
      method,
      path,
      pullRequests: 0,
      status: 0,
    };
    this.requests.push(record);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      if (res.destroyed) {
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };

    const index = this.faults.findIndex(
      (f) => (!f.only || f.only === kind) && (!f.match || (f.match.method === method && f.match.path === path)),
    );
    const fault = index >= 0 ? this.faults.splice(index, 1)[0].fault : null;
    if (fault?.kind === 'delay') {
      await new Promise((resolve) => setTimeout(resolve, fault.ms));
    }
    if (fault?.kind === 'hang') {
      return;
    }
    if (this.options.token !== undefined && kind !== 'other') {
      const given = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (given !== this.options.token) {
        return send(401, { documentation_url: 'https://docs.github.com/rest', message: 'Bad credentials' });
      }
    }
    if (fault?.kind === 'status') {
      return send(fault.status, { message: fault.message ?? `Fake GitHub fault ${fault.status}` });
    }
    if (fault?.kind === 'secondary') {
      return send(
        fault.status,
        {
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
        },
        fault.retryAfterSeconds === null ? {} : { 'retry-after': String(fault.retryAfterSeconds) },
      );
    }

    if (/^(\/api\/v3)?\/user$/.test(path) && method === 'GET') {
      const given = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (given === undefined || (this.options.token !== undefined && given !== this.options.token)) {
        return send(401, { documentation_url: 'https://docs.github.com/rest', message: 'Bad credentials' });
      }
      const scopes = this.options.scopes === undefined ? 'repo' : this.options.scopes;
      return send(200, { id: 1, login: 'octocat' }, scopes === null ? {} : { 'x-oauth-scopes': scopes });
    }
    if (kind === 'rate_limit' && method === 'GET') {
      const resources = Object.fromEntries((['core', 'graphql'] as const).map((r) => [r, this.describe(r)]));
      return send(200, { rate: resources.core, resources });
    }
    if (kind === 'graphql') {
      return this.answerGraphql(Buffer.concat(chunks).toString('utf8'), record, send);
    }
    const pulls = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(path);
    if (pulls && (method === 'POST' || method === 'GET')) {
      if (!this.charge('core', 1, record)) {
        return this.rateLimited(send);
      }
      const repository = `${pulls[1]}/${pulls[2]}`;
      if (method === 'GET') {
        const query = new URL(req.url ?? '/', 'http://fake').searchParams;
        const head = query.get('head');
        const base = query.get('base');
        const state = query.get('state') ?? 'open';
        const matching = [...this.pulls.values()]
          .filter((pr) => `${pr.owner}/${pr.repo}`.toLowerCase() === repository.toLowerCase())
          .filter((pr) => head === null || `${pr.owner}:${pr.headBranch}`.toLowerCase() === head.toLowerCase())
          .filter((pr) => base === null || pr.baseBranch === base)
          .filter((pr) => state === 'all' || (state === 'open' ? pr.state === 'OPEN' : pr.state !== 'OPEN'))
          .sort((a, b) => b.number - a.number);
        record.pullRequests = matching.length;
        return send(
          200,
          matching.map((pr) => this.restPullRequest(pr)),
          this.rateHeaders('core'),
        );
      }
      let input: { title?: unknown; body?: unknown; head?: unknown; base?: unknown; draft?: unknown };
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(400, { message: 'Problems parsing JSON' });
      }
      const invalid = (message: string) =>
        send(422, {
          documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
          errors: [{ code: 'custom', message, resource: 'PullRequest' }],
          message: 'Validation Failed',
        });
      if (typeof input.title !== 'string' || typeof input.head !== 'string' || typeof input.base !== 'string') {
        return invalid('title, head and base are required');
      }
      const headBranch = input.head.includes(':') ? input.head.slice(input.head.indexOf(':') + 1) : input.head;
      const open = [...this.pulls.values()].find(
        (pr) =>
          `${pr.owner}/${pr.repo}`.toLowerCase() === repository.toLowerCase() &&
          pr.headBranch === headBranch &&
          pr.baseBranch === input.base &&
          pr.state === 'OPEN',
      );
      if (open) {
        return invalid(`A pull request already exists for ${pulls[1]}:${headBranch}.`);
      }
      const headSha = this.options.branchHead
        ? this.options.branchHead(repository, headBranch)
        : sha(`${repository}:${headBranch}`);
      if (headSha === null) {
        return send(422, {
          errors: [{ code: 'invalid', field: 'head', resource: 'PullRequest' }],
          message: 'Validation Failed',
        });
      }
      const number =
        1 +
        Math.max(
          0,
          ...[...this.pulls.values()]
            .filter((pr) => `${pr.owner}/${pr.repo}`.toLowerCase() === repository.toLowerCase())
            .map((pr) => pr.number),
        );
      const pr = this.addPullRequest({
        baseBranch: input.base,
        body: typeof input.body === 'string' ? input.body : '',
        headBranch,
        headSha,
        isDraft: input.draft === true,
        mergeable: 'UNKNOWN',
        number,
        repository,
        title: input.title,
      });
      record.pullRequests = 1;
      return send(201, this.restPullRequest(pr), this.rateHeaders('core'));
    }
    const repoComments = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/issues\/comments$/.exec(path);
    if (repoComments && method === 'GET') {
      if (!this.charge('core', 1, record)) {
        return this.rateLimited(send);
      }
      const repository = `${repoComments[1]}/${repoComments[2]}`.toLowerCase();
      const query = new URL(req.url ?? '/', 'http://fake').searchParams;
      const since = query.get('since');
      const all = [...this.issues.values()]
        .filter((i) => i.repository.toLowerCase() === repository)
        .flatMap((i) =>
          i.comments.map((c, n) => ({
            body: c.body,
            created_at: c.createdAt,
            html_url: `${this.url}/${i.repository}/issues/${i.number}#issuecomment-${i.number * 1000 + n + 1}`,
            id: i.number * 1000 + n + 1,
            issue_url: `${this.url}/repos/${i.repository}/issues/${i.number}`,
            updated_at: c.createdAt,
            user: c.author === null ? null : { login: c.author },
          })),
        )
        .filter((c) => since === null || Date.parse(c.updated_at) >= Date.parse(since))
        .sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || a.id - b.id);
      const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
      const page = Math.max(1, Number(query.get('page') ?? 1));
      return send(200, all.slice((page - 1) * perPage, page * perPage), this.rateHeaders('core'));
    }
    const issueList = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/issues$/.exec(path);
    const search = /^(?:\/api\/v3)?\/search\/issues$/.test(path);
    if ((issueList || search) && method === 'GET') {
      return this.answerIssueList(
        issueList,
        new URL(req.url ?? '/', 'http://fake').searchParams,
        req.headers['if-none-match'],
        record,
        send,
      );
    }
    const issue = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)(\/comments)?$/.exec(path);
    if (issue && method === 'GET') {
      return this.answerIssue(issue, new URL(req.url ?? '/', 'http://fake').searchParams, record, send);
    }
    const permission = /^(?:\/api\/v3)?\/repos\/[^/]+\/[^/]+\/collaborators\/([^/]+)\/permission$/.exec(path);
    if (permission && method === 'GET') {
      if (!this.charge('core', 1, record)) {
        return this.rateLimited(send);
      }
      const granted = this.permissions.get(decodeURIComponent(permission[1]));
      return granted === undefined
        ? send(404, { message: 'Not Found' }, this.rateHeaders('core'))
        : send(200, { permission: granted }, this.rateHeaders('core'));
    }
    const events = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/events$/.exec(path);
    if (events && method === 'GET') {
      if (!this.charge('core', 1, record)) {
        return this.rateLimited(send);
      }
      const found = this.issues.get(keyOf(`${events[1]}/${events[2]}`, Number(events[3])));
      if (!found) {
        return send(404, { message: 'Not Found' }, this.rateHeaders('core'));
      }
      return send(
        200,
        found.labelEvents.map((e, i) => ({
          actor: e.actor === null ? null : { login: e.actor },
          event: 'labeled',
          id: i + 1,
          label: { name: e.label },
        })),
        this.rateHeaders('core'),
      );
    }
    if (issue && (method === 'POST' || method === 'PATCH')) {
      return this.writeIssue(issue, method, Buffer.concat(chunks).toString('utf8'), record, send);
    }
    const pull = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/.exec(path);
    if (pull && method === 'GET') {
      record.pullRequests = 1;
      if (!this.charge('core', 1, record)) {
        return this.rateLimited(send);
      }
      const pr = this.pulls.get(keyOf(`${pull[1]}/${pull[2]}`, Number(pull[3])));
      if (!pr) {
        return send(
          404,
          { documentation_url: 'https://docs.github.com/rest/pulls/pulls#get-a-pull-request', message: 'Not Found' },
          this.rateHeaders('core'),
        );
      }
      const body = this.restPullRequest(pr);
      const etag = `"${createHash('sha1').update(JSON.stringify(body)).digest('hex')}"`;
      if (req.headers['if-none-match'] === etag) {
        this.budgets.core.used--; // GitHub does not charge a 304
        record.cost = 0;
        return send(304, undefined, { etag, ...this.rateHeaders('core') });
      }
      return send(200, body, { etag, ...this.rateHeaders('core') });
    }
    this.unhandled.push({ method, path });
    send(404, { message: 'Not Found' });
  }

  private answerGraphql(
    raw: string,
    record: FakeRequest,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): void {
    let request: { query?: string; variables?: Record<string, unknown> };
    try {
      request = JSON.parse(raw);
    } catch {
      return send(400, { message: 'Problems parsing JSON' });
    }
    const query = request.query ?? '';
    const variables = request.variables ?? {};
    // The client's summary query spreads its own fragment; anything else is read as a snapshot query.
    const kind: FakeGraphqlQuery = /\.\.\.PullRequestSummaryFields\b/.test(query) ? 'summary' : 'snapshot';
    record.query = kind;
    const aliases = Object.keys(variables)
      .filter((name) => /^p\d+$/.test(name))
      .map((name) => Number(name.slice(1)))
      .sort((a, b) => a - b);
    for (const i of aliases) {
      // The query must declare what the variables fill in: a cheap check that client and fake agree.
      if (!query.includes(`pr${i}: repository(owner: $o${i}, name: $n${i}) { pullRequest(number: $p${i})`)) {
        return send(200, { errors: [{ message: `alias pr${i} does not match the variables` }] });
      }
    }
    record.pullRequests = aliases.length;
    const cost = this.options.graphqlCost?.(aliases.length, kind) ?? 1;
    if (!this.charge('graphql', cost, record)) {
      return send(
        200,
        { errors: [{ message: 'API rate limit exceeded for user ID 1.', type: 'RATE_LIMITED' }] },
        this.rateHeaders('graphql'),
      );
    }
    const data: Record<string, unknown> = {};
    const errors: { type: string; message: string; path: string[]; locations: unknown[] }[] = [];
    for (const i of aliases) {
      const owner = String(variables[`o${i}`]);
      const name = String(variables[`n${i}`]);
      const pr = this.pulls.get(keyOf(`${owner}/${name}`, Number(variables[`p${i}`])));
      if (!pr) {
        data[`pr${i}`] = null;
        errors.push({
          locations: [],
          message: `Could not resolve to a Repository with the name '${owner}/${name}'.`,
          path: [`pr${i}`],
          type: 'NOT_FOUND',
        });
      } else if (pr.failure) {
        data[`pr${i}`] = { pullRequest: null };
        errors.push({
          locations: [],
          message: pr.failure.message,
          path: [`pr${i}`, 'pullRequest'],
          type: pr.failure.type,
        });
      } else {
        data[`pr${i}`] = { pullRequest: kind === 'summary' ? this.graphqlSummary(pr) : this.graphqlPullRequest(pr) };
      }
    }
    const budget = this.budget('graphql');
    data.rateLimit = {
      cost,
      limit: budget.limit,
      remaining: budget.limit - budget.used,
      resetAt: new Date(budget.resetAt).toISOString(),
    };
    send(200, errors.length > 0 ? { data, errors } : { data }, this.rateHeaders('graphql'));
  }

  private graphqlPullRequest(pr: FakePullRequest): unknown {
    const authored = (a: FakeAuthored) => ({
      author: a.author === null ? null : { login: a.author },
      authorAssociation: a.authorAssociation,
      body: a.body,
      databaseId: a.databaseId,
      id: a.id,
      url: a.url,
    });
    const contexts = [
      ...pr.checkRuns.map((c) => ({ __typename: 'CheckRun', ...c })),
      ...pr.statuses.map((s) => ({ __typename: 'StatusContext', ...s })),
    ];
    // The limits the client asks for (last 50 comments/reviews, last 20 threads × 10, first 100 checks).
    return {
      baseRefName: pr.baseBranch,
      comments: { nodes: pr.comments.slice(-50).map((c) => ({ ...authored(c), createdAt: c.createdAt })) },
      commits: {
        nodes: [
          {
            commit: {
              oid: pr.headSha,
              statusCheckRollup:
                contexts.length === 0 ? null : { contexts: { nodes: contexts.slice(0, 100) }, state: rollupState(pr) },
            },
          },
        ],
      },
      headRefName: pr.headBranch,
      headRefOid: pr.headSha,
      isDraft: pr.isDraft,
      mergeable: pr.mergeable,
      number: pr.number,
      repository: { nameWithOwner: `${pr.owner}/${pr.repo}` },
      reviewThreads: {
        nodes: pr.reviewThreads.slice(-20).map((t) => ({
          comments: {
            nodes: t.comments
              .slice(-10)
              .map((c) => ({ ...authored(c), createdAt: c.createdAt, line: c.line, path: c.path })),
          },
          id: t.id,
        })),
      },
      reviews: {
        nodes: pr.reviews
          .filter((r) => r.state !== 'PENDING')
          .slice(-50)
          .map((r) => ({ ...authored(r), state: r.state, submittedAt: r.submittedAt })),
      },
      state: pr.state,
      title: pr.title,
      updatedAt: pr.updatedAt,
      url: prUrl(pr),
    };
  }

  /** The summary fields: scalars, and counts computed from the same state the snapshot lists. */
  private graphqlSummary(pr: FakePullRequest): unknown {
    const contexts = pr.checkRuns.length + pr.statuses.length;
    // GitHub's CheckRunState: a completed run's conclusion, else its status.
    const runStates = pr.checkRuns.map((c) => (c.status === 'COMPLETED' && c.conclusion ? c.conclusion : c.status));
    const rollup = {
      contexts: {
        checkRunCountsByState: countByState(runStates),
        statusContextCountsByState: countByState(pr.statuses.map((s) => s.state)),
        totalCount: contexts,
      },
      state: rollupState(pr),
    };
    return {
      comments: { totalCount: pr.comments.length },
      commits: { nodes: [{ commit: { oid: pr.headSha, statusCheckRollup: contexts === 0 ? null : rollup } }] },
      headRefOid: pr.headSha,
      isDraft: pr.isDraft,
      mergeable: pr.mergeable,
      merged: pr.state === 'MERGED',
      number: pr.number,
      repository: { nameWithOwner: `${pr.owner}/${pr.repo}` },
      reviewThreads: { totalCount: pr.reviewThreads.length },
      reviews: { totalCount: pr.reviews.filter((r) => r.state !== 'PENDING').length },
      state: pr.state,
      updatedAt: pr.updatedAt,
    };
  }

  private restPullRequest(pr: FakePullRequest): unknown {
    const repo = { full_name: `${pr.owner}/${pr.repo}`, name: pr.repo, owner: { login: pr.owner } };
    return {
      base: { ref: pr.baseBranch, repo },
      body: pr.body,
      draft: pr.isDraft,
      head: { ref: pr.headBranch, repo, sha: pr.headSha },
      html_url: prUrl(pr),
      mergeable: pr.mergeable === 'UNKNOWN' ? null : pr.mergeable === 'MERGEABLE',
      mergeable_state: pr.mergeable === 'UNKNOWN' ? 'unknown' : pr.mergeable === 'CONFLICTING' ? 'dirty' : 'clean',
      merged: pr.state === 'MERGED',
      number: pr.number,
      state: pr.state === 'OPEN' ? 'open' : 'closed',
      title: pr.title,
      updated_at: pr.updatedAt,
    };
  }

  private budget(resource: 'core' | 'graphql'): Budget {
    const budget = this.budgets[resource];
    if (Date.now() >= budget.resetAt) {
      budget.used = 0;
      budget.resetAt = Date.now() + HOUR;
    }
    return budget;
  }

  private charge(resource: 'core' | 'graphql', cost: number, record: FakeRequest): boolean {
    const budget = this.budget(resource);
    if (budget.used + cost > budget.limit) {
      return false;
    }
    budget.used += cost;
    record.cost = cost;
    return true;
  }

  private describe(resource: 'core' | 'graphql') {
    const budget = this.budget(resource);
    return {
      limit: budget.limit,
      remaining: budget.limit - budget.used,
      reset: Math.ceil(budget.resetAt / 1000),
      resource,
      used: budget.used,
    };
  }

  private rateHeaders(resource: 'core' | 'graphql'): Record<string, string> {
    const d = this.describe(resource);
    return {
      'x-ratelimit-limit': String(d.limit),
      'x-ratelimit-remaining': String(d.remaining),
      'x-ratelimit-reset': String(d.reset),
      'x-ratelimit-resource': resource,
      'x-ratelimit-used': String(d.used),
    };
  }

  private authored(
    pr: FakePullRequest,
    prefix: string,
    databaseId: number,
    anchor: string,
    init: { author?: string | null; body: string; authorAssociation?: string },
  ): FakeAuthored {
    return {
      author: init.author === undefined ? 'reviewer' : init.author,
      authorAssociation: init.authorAssociation ?? 'CONTRIBUTOR',
      body: init.body,
      databaseId,
      id: `${prefix}_${databaseId}`,
      url: `${prUrl(pr)}${anchor}`,
    };
  }

  private touch(pr: FakePullRequest): FakePullRequest {
    // Strictly increasing even within one millisecond, so "changed since" checks are reliable.
    const now = Math.max(Date.now(), Date.parse(pr.updatedAt) + 1);
    pr.updatedAt = new Date(now).toISOString();
    return pr;
  }
}

/** Now as GitHub writes times: whole seconds. */
function githubNow(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function keyOf(repository: string, number: number): string {
  return `${repository.toLowerCase()}#${number}`;
}

function prUrl(pr: FakePullRequest): string {
  return `https://github.test/${pr.owner}/${pr.repo}/pull/${pr.number}`;
}

function sha(seed: string): string {
  return createHash('sha1').update(seed).digest('hex');
}

/** `{ state, count }` per distinct state, in order of first appearance (GitHub promises no order). */
function countByState(states: readonly string[]): { state: string; count: number }[] {
  const counts = new Map<string, number>();
  states.forEach((state) => counts.set(state, (counts.get(state) ?? 0) + 1));
  return [...counts].map(([state, count]) => ({ count, state }));
}

function rollupState(pr: FakePullRequest): FakeStatus['state'] {
  const states = [
    ...pr.checkRuns.map((c) =>
      c.status !== 'COMPLETED'
        ? 'PENDING'
        : ['FAILURE', 'TIMED_OUT', 'CANCELLED', 'ACTION_REQUIRED', 'STARTUP_FAILURE'].includes(c.conclusion ?? '')
          ? 'FAILURE'
          : 'SUCCESS',
    ),
    ...pr.statuses.map((s) => s.state),
  ];
  return states.includes('ERROR')
    ? 'ERROR'
    : states.includes('FAILURE')
      ? 'FAILURE'
      : states.includes('PENDING') || states.includes('EXPECTED')
        ? 'PENDING'
        : 'SUCCESS';
}

/** A time as GitHub writes it: ISO 8601 in whole seconds (`2026-12-06T23:59:59Z`). */
function githubTime(at = new Date()): string {
  return `${at.toISOString().slice(0, 19)}Z`;
}
