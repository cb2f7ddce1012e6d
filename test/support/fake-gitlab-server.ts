// A fake GitLab for end-to-end tests: one real HTTP server on 127.0.0.1 (ephemeral port) serving the
// part of the REST API v4 the manager's GitLab client uses. It follows GitLab's API docs rather than
// the client (which is written against the same docs), so that a test catches a client mistake:
//
//   GET  /api/v4/user                                          the token's user
//   GET  /api/v4/users[/:id]                                   users by username (paginated); one user, with `bot`
//   GET  /api/v4/projects/:id                                  :id numeric or URL-encoded path (any case)
//   GET  /api/v4/projects/:id/members[/all]/:user_id           a member's access_level (404: not a member)
//   GET  /api/v4/projects/:id/merge_requests                   state, iids[], source_branch, target_branch,
//                                                              updated_after, order_by, sort (paginated)
//   POST /api/v4/projects/:id/merge_requests                   opens one (409: one is open for the branches)
//   GET  /api/v4/projects/:id/merge_requests/:iid              one MR, with head_pipeline and diff_refs
//   GET|POST …/merge_requests/:iid/notes                       its notes (sort, order_by; paginated); comments
//   GET  …/merge_requests/:iid/discussions                     its threads (paginated)
//   GET  …/merge_requests/:iid/pipelines                       its pipelines, newest first (paginated)
//   GET  /api/v4/projects/:id/pipelines/:pipeline_id[/jobs]    a pipeline; its jobs (scope[]; paginated)
//   GET  /api/v4/projects/:id/jobs/:job_id[/trace]             a job; its whole log as text/plain
//   GET  /api/v4/projects/:id/issues[/:iid]                    state, labels, search, iids[], updated_after,
//                                                              order_by, sort (paginated); one issue
//   PUT  /api/v4/projects/:id/issues/:iid                      state_event close|reopen, title, labels…
//   GET|POST …/issues/:iid/notes, GET …/issues/:iid/discussions
//   GET  …/issues/:iid/resource_label_events[/:id]             who added or removed which label, oldest first
//
// Every request needs the token (PRIVATE-TOKEN or Authorization: Bearer), else 401. Every answer has
// RateLimit-* headers from a simulated budget (2,000 requests a minute, GitLab.com's authenticated API
// limit); past it, 429 with Retry-After. Tests change the state synchronously (the helpers bump
// updated_at where GitLab would; the returned objects are live), inject faults and read the request log.
import { createHash, randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type FakeMergeRequestState = 'opened' | 'closed' | 'merged' | 'locked';
type FakeMergeCheck = 'ci_must_pass' | 'ci_still_running' | 'discussions_not_resolved' | 'need_rebase' | 'not_approved';
/** GitLab's `detailed_merge_status` values a test is likely to want (GitLab has a few more). */
export type FakeDetailedMergeStatus =
  'mergeable' | 'conflict' | 'checking' | 'unchecked' | 'draft_status' | 'not_open' | FakeMergeCheck;
const ACTIVE = ['created', 'waiting_for_resource', 'preparing', 'pending', 'running', 'manual', 'scheduled'] as const;
const DONE = ['success', 'failed', 'canceled', 'canceling', 'skipped'] as const;
export type FakePipelineStatus = (typeof ACTIVE)[number] | (typeof DONE)[number];
export type FakeJobStatus = FakePipelineStatus;
const STATUSES: readonly string[] = [...ACTIVE, ...DONE];
/** Statuses with a finished_at (canceling is still on its way). */
const FINISHED: readonly string[] = ['success', 'failed', 'canceled', 'skipped'];
/** Statuses without a started_at. */
const UNSTARTED: readonly string[] = ['created', 'waiting_for_resource', 'preparing', 'pending', 'manual', 'scheduled'];

/** A member's role (GitLab's access_level): 10 Guest, 15 Planner, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner. */
export type FakeAccessLevel = 10 | 15 | 20 | 30 | 40 | 50;

export interface FakeProject {
  id: number;
  /** `path_with_namespace` as added (its case kept; lookups ignore case). */
  path: string;
  defaultBranch: string;
  /** Set by forbid(): every request on the project answers 403. */
  forbidden: boolean;
}

/** A note (comment) on a merge request or an issue; its parent's `notes` lists them in creation order. */
export interface FakeNote {
  id: number;
  /** The discussion (thread) it is in: 40 hex characters, as GitLab's discussion ids are. */
  discussionId: string;
  noteableType: 'MergeRequest' | 'Issue';
  noteableIid: number;
  author: string;
  body: string;
  createdAt: string;
  updatedAt: string;
  /** GitLab's own notes ("closed", "added 1 commit"): not counted in user_notes_count. */
  system: boolean;
  /** null: a plain comment; DiscussionNote: in a thread; DiffNote: on a line of the diff. */
  type: null | 'DiffNote' | 'DiscussionNote';
  /** Thread notes on merge requests only (GitLab resolves threads, not plain comments). */
  resolvable: boolean;
  resolved: boolean;
  position: { newPath: string; newLine: number | null; oldPath: string; oldLine: number | null } | null;
}

export interface FakeMergeRequest {
  id: number;
  iid: number;
  projectId: number;
  project: string;
  /** GitLab derives `draft` from the title ("Draft:", "[Draft]", "(Draft)" prefixes), and so does the fake. */
  title: string;
  description: string;
  state: FakeMergeRequestState;
  sourceBranch: string;
  targetBranch: string;
  /** The head commit of the source branch. */
  sha: string;
  author: string;
  labels: string[];
  hasConflicts: boolean;
  /** A detailed_merge_status the test forces (push() sets 'checking', settle() clears it); null: derived. */
  mergeStatus: FakeDetailedMergeStatus | null;
  createdAt: string;
  updatedAt: string;
  mergedAt: string | null;
  closedAt: string | null;
  notes: FakeNote[];
}

export interface FakeJob {
  id: number;
  name: string;
  stage: string;
  status: FakeJobStatus;
  /** What GET …/jobs/:id/trace answers. */
  log: string;
  allowFailure: boolean;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface FakePipeline {
  id: number;
  iid: number;
  projectId: number;
  project: string;
  mergeRequestIid: number;
  sha: string;
  /** The source branch (a branch pipeline) or refs/merge-requests/:iid/head (a merge request pipeline). */
  ref: string;
  source: 'push' | 'merge_request_event';
  status: FakePipelineStatus;
  jobs: FakeJob[];
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface FakeIssue {
  id: number;
  iid: number;
  projectId: number;
  project: string;
  title: string;
  description: string | null;
  state: 'opened' | 'closed';
  labels: string[];
  author: string;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  closedBy: string | null;
  /** Its notes, those written through the API included. */
  notes: FakeNote[];
  /** Its labels' history, oldest first (GET …/resource_label_events). */
  labelEvents: FakeLabelEvent[];
}

/** A label added to or removed from an issue: GitLab's resource label event. */
export interface FakeLabelEvent {
  id: number;
  action: 'add' | 'remove';
  /** The label's name. */
  label: string;
  /** Who did it. */
  user: string;
  createdAt: string;
}

export interface FakeGitLabRequest {
  method: string;
  /** The path as sent (a project path stays URL-encoded). */
  path: string;
  /** Query parameters; a repeated one (iids[]=1&iids[]=2) as an array. */
  query: Record<string, string | string[]>;
  status: number;
  at: number;
}

export interface FakeGitLabOptions {
  /** The one token the server accepts (default 'glpat-fake-token'). */
  token?: string;
  /** The token's user (default 'agent-manager-bot'): GET /user, and the author of what the API writes. */
  username?: string;
  /** Requests per one-minute window (default 2,000). */
  rateLimit?: number;
}

/** Which requests a fault hits: the method, and a substring of (or RegExp on) the path, raw or decoded. */
export interface FakeGitLabMatch {
  method: string;
  path: string | RegExp;
}

type Fault = { kind: 'status'; status: number } | { kind: 'delay'; ms: number } | { kind: 'hang' };
/** An answer; a string body is sent as text/plain (a job's trace, a throttle), anything else as JSON. */
interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}
interface Context {
  url: URL;
  query: URLSearchParams;
  /** The body's parameters (JSON, or a form), parsed when a handler asks: 400 when it is not JSON. */
  input: () => Record<string, unknown>;
}
type Noteable = FakeMergeRequest | FakeIssue;
type NoteOptions = { system?: boolean; diff?: { path: string; line: number }; replyTo?: string; createdAt?: string };

/** GitLab's error answers, thrown by handlers; anything else thrown is a bug in the fake (500). */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`GitLab ${status}`);
  }
}

const WINDOW_MS = 60_000;
/** The color GitLab gives a label created on the fly (by a `labels` parameter naming a new one). */
const LABEL_COLOR = '#6699cc';
const DRAFT = /^\s*(\[draft\]|\(draft\)|draft:)/i;
const notFound = () => new ApiError(404, { message: '404 Not found' });
/**
 * GitLab's parameter validation (Grape) answers `{"error": "title is missing"}` while its docs show a
 * `message`: the fake sends both, so a client reading either works against both.
 */
const badRequest = (text: string) => new ApiError(400, { error: text, message: text });
const ok = (body: unknown, status = 200): Answer => ({ body, status });
const on = (rest: string) => new RegExp(`^/api/v4/projects/([^/]+)${rest}$`);

export class FakeGitLabServer {
  readonly requests: FakeGitLabRequest[] = [];
  /** Requests no route served (answered 404): should stay empty. */
  readonly unhandled: Array<{ method: string; path: string }> = [];
  readonly url: string;
  readonly apiUrl: string;
  readonly token: string;
  readonly username: string;
  private readonly faults: Array<{ fault: Fault; match?: FakeGitLabMatch }> = [];
  private readonly projects: FakeProject[] = [];
  private readonly mergeRequests = new Map<string, FakeMergeRequest>();
  private readonly issues = new Map<string, FakeIssue>();
  private readonly pipelines = new Map<number, FakePipeline>();
  private readonly users = new Map<string, number>();
  private readonly bots = new Set<string>();
  /** Label ids by `projectId~name` (GitLab creates a label the first time an issue gets it). */
  private readonly labels = new Map<string, number>();
  /** Project members by `projectId@username`. */
  private readonly members = new Map<string, { accessLevel: FakeAccessLevel; createdAt: string }>();
  private readonly budget: { limit: number; used: number; resetAt: number };
  private readonly sockets = new Set<Socket>();
  private nextId = 100;

  /** Merge commits of merged-results pipelines, by sha: their parents. */
  private readonly commits = new Map<string, string[]>();
  private readonly routes: Array<[string, RegExp, (c: Context, m: RegExpExecArray) => Answer]> = [
    [
      'GET',
      /^\/api\/v4\/user$/,
      () => ok({ ...this.userDetailJson(this.username), email: `${this.username}@example.test` }),
    ],
    ['GET', /^\/api\/v4\/users$/, (c) => this.listUsers(c)],
    ['GET', /^\/api\/v4\/users\/(\d+)$/, (c, m) => ok(this.userDetailJson(this.findUser(m[1])))],
    ['GET', on(''), (c, m) => ok(this.projectJson(this.resolve(m[1])))],
    [
      'GET',
      on('/repository/commits/([0-9a-f]{7,64})'),
      (c, m) => {
        this.resolve(m[1]);
        const parents = this.commits.get(m[2]);
        if (parents === undefined) {
          throw new ApiError(404, { message: '404 Commit Not Found' });
        }
        return ok({ id: m[2], parent_ids: parents, short_id: m[2].slice(0, 8) });
      },
    ],
    ['GET', on('/members/(\\d+)'), (c, m) => ok(this.memberJson(this.resolve(m[1]), m[2]))],
    ['GET', on('/members/all/(\\d+)'), (c, m) => ok(this.memberJson(this.resolve(m[1]), m[2]))],
    ['GET', on('/merge_requests'), (c, m) => this.listMergeRequests(c, this.resolve(m[1]))],
    ['POST', on('/merge_requests'), (c, m) => this.createMergeRequest(c, this.resolve(m[1]))],
    ['GET', on('/merge_requests/(\\d+)'), (c, m) => ok(this.mergeRequestJson(this.findMergeRequest(m), true))],
    ['GET', on('/merge_requests/(\\d+)/notes'), (c, m) => this.listNotes(c, this.findMergeRequest(m))],
    ['POST', on('/merge_requests/(\\d+)/notes'), (c, m) => this.postNote(c, this.findMergeRequest(m))],
    ['GET', on('/merge_requests/(\\d+)/discussions'), (c, m) => this.listDiscussions(c, this.findMergeRequest(m))],
    ['GET', on('/merge_requests/(\\d+)/pipelines'), (c, m) => this.listPipelines(c, this.findMergeRequest(m))],
    ['GET', on('/pipelines/(\\d+)'), (c, m) => ok(this.pipelineJson(this.findPipeline(m), true))],
    ['GET', on('/pipelines/(\\d+)/jobs'), (c, m) => this.listJobs(c, this.findPipeline(m))],
    ['GET', on('/jobs/(\\d+)'), (c, m) => ok(this.jobJson(...this.findJob(m)))],
    ['GET', on('/jobs/(\\d+)/trace'), (c, m) => ok(this.findJob(m)[1].log)],
    ['GET', on('/issues'), (c, m) => this.listIssues(c, this.resolve(m[1]))],
    ['GET', on('/issues/(\\d+)'), (c, m) => ok(this.issueJson(this.findIssue(m)))],
    ['PUT', on('/issues/(\\d+)'), (c, m) => this.updateIssue(c, this.findIssue(m))],
    ['GET', on('/issues/(\\d+)/notes'), (c, m) => this.listNotes(c, this.findIssue(m))],
    ['POST', on('/issues/(\\d+)/notes'), (c, m) => this.postNote(c, this.findIssue(m))],
    ['GET', on('/issues/(\\d+)/discussions'), (c, m) => this.listDiscussions(c, this.findIssue(m))],
    ['GET', on('/issues/(\\d+)/resource_label_events'), (c, m) => this.listLabelEvents(c, this.findIssue(m))],
    ['GET', on('/issues/(\\d+)/resource_label_events/(\\d+)'), (c, m) => ok(this.findLabelEvent(m))],
  ];

  private constructor(
    private readonly server: http.Server,
    port: number,
    options: FakeGitLabOptions,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.apiUrl = `${this.url}/api/v4`;
    this.token = options.token ?? 'glpat-fake-token';
    this.username = options.username ?? 'agent-manager-bot';
    this.users.set(this.username, 1); // the token's user is user 1
    this.budget = { limit: options.rateLimit ?? 2_000, resetAt: Date.now() + WINDOW_MS, used: 0 };
    // Nobody knows the port yet, so no connection can have been missed.
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req, res) => void this.handle(req, res));
  }

  static async start(options: FakeGitLabOptions = {}): Promise<FakeGitLabServer> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return new FakeGitLabServer(server, (server.address() as AddressInfo).port, options);
  }

  /** Stops listening and drops open connections (hung requests included): later requests are refused. */
  async close(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- state: projects and merge requests -----------------------------------------------------

  /** Adds a project; the token's user is its Maintainer (and nobody else a member). */
  addProject(path: string, init: { defaultBranch?: string } = {}): FakeProject {
    const project = {
      defaultBranch: init.defaultBranch ?? 'main',
      forbidden: false,
      id: this.projects.length + 1,
      path,
    };
    this.projects.push(project);
    this.members.set(`${project.id}@${this.username}`, { accessLevel: 40, createdAt: this.now() });
    return project;
  }

  /** The project's live state (throws when absent). */
  project(path: string): FakeProject {
    const project = this.projects.find((p) => p.path.toLowerCase() === path.toLowerCase());
    if (!project) {
      throw new Error(`fake GitLab has no project ${path}`);
    }
    return project;
  }

  /** Every request on the project answers 403 (or, with false, normally again). */
  forbid(path: string, forbidden = true): void {
    this.project(path).forbidden = forbidden;
  }

  /** Adds an MR (the next iid unless given; by the token's user unless said); `draft` prefixes "Draft: ". */
  addMergeRequest(init: {
    project: string;
    iid?: number;
    title: string;
    sourceBranch: string;
    targetBranch?: string;
    sha?: string;
    draft?: boolean;
    state?: FakeMergeRequestState;
    author?: string;
    description?: string;
    labels?: string[];
  }): FakeMergeRequest {
    const project = this.project(init.project);
    const iid = init.iid ?? 1 + Math.max(0, ...this.of(this.mergeRequests, project).map((mr) => mr.iid));
    const now = this.now();
    const state = init.state ?? 'opened';
    const mr: FakeMergeRequest = {
      author: this.seen(init.author ?? this.username),
      closedAt: state === 'closed' ? now : null,
      createdAt: now,
      description: init.description ?? '',
      hasConflicts: false,
      id: this.nextId++,
      iid,
      labels: init.labels ?? [],
      mergeStatus: null,
      mergedAt: state === 'merged' ? now : null,
      notes: [],
      project: project.path,
      projectId: project.id,
      sha: init.sha ?? sha(`${project.path}:${init.sourceBranch}:${this.nextId}`),
      sourceBranch: init.sourceBranch,
      state,
      targetBranch: init.targetBranch ?? project.defaultBranch,
      title: init.draft && !DRAFT.test(init.title) ? `Draft: ${init.title}` : init.title,
      updatedAt: now,
    };
    this.mergeRequests.set(`${project.id}!${iid}`, mr);
    return mr;
  }

  /** The MR's live state (throws when absent). */
  mergeRequest(project: string, iid: number): FakeMergeRequest {
    const mr = this.mergeRequests.get(`${this.project(project).id}!${iid}`);
    if (!mr) {
      throw new Error(`fake GitLab has no merge request ${project}!${iid}`);
    }
    return mr;
  }

  /** Deletes the MR: the API answers 404 for it from now on. */
  removeMergeRequest(project: string, iid: number): void {
    this.mergeRequests.delete(`${this.mergeRequest(project, iid).projectId}!${iid}`);
  }

  /**
   * A push to the source branch: a new head (returned), updated_at bumped, and detailed_merge_status
   * (and merge_status) 'checking', as GitLab answers while it rechecks mergeability, until settle()
   * (or setMergeStatus(…, null)). The old head's pipelines stop being head_pipeline.
   */
  push(project: string, iid: number, newSha?: string): string {
    const mr = this.mergeRequest(project, iid);
    // Seeded apart from the creation's seed: a push always moves the head.
    mr.sha = newSha ?? sha(`${mr.project}:${mr.sourceBranch}:push:${this.nextId++}`);
    mr.mergeStatus = 'checking';
    this.touch(mr);
    return mr.sha;
  }

  /** GitLab is done rechecking: detailed_merge_status is derived again (mergeable, conflict, draft_status…). */
  settle(project: string, iid: number): void {
    this.mergeRequest(project, iid).mergeStatus = null;
  }

  /** Merges, closes, reopens or locks the MR (merged_at, closed_at as GitLab sets them). */
  setState(project: string, iid: number, state: FakeMergeRequestState): void {
    const mr = this.mergeRequest(project, iid);
    const now = this.now();
    mr.state = state;
    mr.mergedAt = state === 'merged' ? now : mr.mergedAt;
    mr.closedAt = state === 'closed' ? now : state === 'opened' ? null : mr.closedAt;
    this.touch(mr);
  }

  /** Marks or unmarks the MR draft the way GitLab does: with the title's "Draft: " prefix. */
  setDraft(project: string, iid: number, draft: boolean): void {
    const mr = this.mergeRequest(project, iid);
    if (draft !== DRAFT.test(mr.title)) {
      mr.title = draft ? `Draft: ${mr.title}` : mr.title.replace(DRAFT, '').trimStart();
      this.touch(mr);
    }
  }

  /** has_conflicts (GitLab computes it in the background: updated_at does not move). */
  setConflicts(project: string, iid: number, hasConflicts: boolean): void {
    this.mergeRequest(project, iid).hasConflicts = hasConflicts;
  }

  /** Forces detailed_merge_status (null: derived again); an MR that is not open still answers 'not_open'. */
  setMergeStatus(project: string, iid: number, status: FakeDetailedMergeStatus | null): void {
    this.mergeRequest(project, iid).mergeStatus = status;
  }

  /** detailed_merge_status as the API answers it now. */
  detailedMergeStatus(project: string, iid: number): FakeDetailedMergeStatus {
    return detailedStatus(this.mergeRequest(project, iid));
  }

  /**
   * A note on an MR: a plain comment (alone in its discussion), a system note, a note on a line of
   * the diff (a new DiffNote thread), or a reply in a thread (`replyTo`: its discussion id; replying
   * to a plain comment makes a thread of it, as in GitLab). Bumps the MR's updated_at.
   */
  addNote(project: string, iid: number, author: string, body: string, options: NoteOptions = {}): FakeNote {
    return this.writeNote(this.mergeRequest(project, iid), author, body, options);
  }

  /** Resolves (or unresolves) a thread on an MR. */
  resolveDiscussion(project: string, iid: number, discussionId: string, resolved = true): void {
    for (const note of this.mergeRequest(project, iid).notes.filter((n) => n.discussionId === discussionId)) {
      note.resolved = note.resolvable && resolved;
    }
  }

  /**
   * A pipeline for the MR, on its head unless `sha` says otherwise (then it is the MR's head_pipeline).
   * Adding one bumps the MR's updated_at (GitLab updates the MR's head pipeline); later status changes
   * do not. Jobs are live: change `pipeline.jobs[i].status` / `.log` directly.
   */
  addPipeline(
    project: string,
    iid: number,
    init: {
      status: FakePipelineStatus;
      sha?: string;
      source?: FakePipeline['source'];
      /** A merged-results pipeline: it runs on a merge commit of the head and the target (`sha`, its parents the head and `target`). */
      mergedResults?: { target: string };
      jobs: Array<{ name: string; stage?: string; status: FakeJobStatus; log?: string; allowFailure?: boolean }>;
    },
  ): FakePipeline {
    const mr = this.mergeRequest(project, iid);
    const now = this.now();
    const source = init.source ?? 'push';
    const times = (status: string) => ({
      finishedAt: FINISHED.includes(status) ? now : null,
      startedAt: UNSTARTED.includes(status) ? null : now,
    });
    const pipeline: FakePipeline = {
      createdAt: now,
      id: this.nextId++,
      iid: 1 + [...this.pipelines.values()].filter((p) => p.projectId === mr.projectId).length,
      jobs: init.jobs.map((job) => ({
        allowFailure: job.allowFailure ?? false,
        createdAt: now,
        id: this.nextId++,
        log: job.log ?? '',
        name: job.name,
        stage: job.stage ?? 'test',
        status: job.status,
        ...times(job.status),
      })),
      mergeRequestIid: iid,
      project: mr.project,
      projectId: mr.projectId,
      ref: init.mergedResults
        ? `refs/merge-requests/${iid}/merge`
        : source === 'push'
          ? mr.sourceBranch
          : `refs/merge-requests/${iid}/head`,
      sha: init.sha ?? mr.sha,
      source,
      status: init.status,
      updatedAt: now,
      ...times(init.status),
    };
    this.pipelines.set(pipeline.id, pipeline);
    if (init.mergedResults) {
      this.commits.set(pipeline.sha, [mr.sha, init.mergedResults.target]);
    }
    this.touch(mr);
    return pipeline;
  }

  /** A pipeline's new status (the MR's updated_at does not move: GitLab does not touch the MR for it). */
  setPipelineStatus(project: string, pipelineId: number, status: FakePipelineStatus): FakePipeline {
    const pipeline = this.pipelines.get(pipelineId);
    if (!pipeline || pipeline.projectId !== this.project(project).id) {
      throw new Error(`fake GitLab has no pipeline ${pipelineId} in ${project}`);
    }
    pipeline.status = status;
    this.touch(pipeline);
    pipeline.startedAt ??= UNSTARTED.includes(status) ? null : pipeline.updatedAt;
    pipeline.finishedAt = FINISHED.includes(status) ? pipeline.updatedAt : null;
    return pipeline;
  }

  /**
   * The MR's head_pipeline as GitLab keeps it: its newest pipeline. GitLab moves it when a
   * pipeline is created for the MR and leaves it after a push that ran none ([ci skip], rules),
   * so it can be an older head's.
   */
  headPipeline(project: string, iid: number): FakePipeline | null {
    return this.pipelinesOf(this.mergeRequest(project, iid))[0] ?? null;
  }

  // ---- state: issues --------------------------------------------------------------------------

  /** Adds an issue (the next iid unless given; by 'maintainer' unless said), its labels added by its author. */
  addIssue(init: {
    project: string;
    iid?: number;
    title: string;
    description?: string | null;
    labels?: string[];
    author?: string;
    state?: 'opened' | 'closed';
  }): FakeIssue {
    const project = this.project(init.project);
    const now = this.now();
    const author = this.seen(init.author ?? 'maintainer');
    const labels = [...new Set(init.labels ?? [])];
    const issue: FakeIssue = {
      author,
      closedAt: init.state === 'closed' ? now : null,
      closedBy: init.state === 'closed' ? author : null,
      createdAt: now,
      description: init.description === undefined ? '' : init.description,
      id: this.nextId++,
      iid: init.iid ?? 1 + Math.max(0, ...this.of(this.issues, project).map((i) => i.iid)),
      labelEvents: labels.map((label) => this.labelEvent(project.id, 'add', label, author, now)),
      labels,
      notes: [],
      project: project.path,
      projectId: project.id,
      state: init.state ?? 'opened',
      title: init.title,
      updatedAt: now,
    };
    this.issues.set(`${project.id}#${issue.iid}`, issue);
    return issue;
  }

  /** The issue's live state (throws when absent). */
  issue(project: string, iid: number): FakeIssue {
    const issue = this.issues.get(`${this.project(project).id}#${iid}`);
    if (!issue) {
      throw new Error(`fake GitLab has no issue ${project}#${iid}`);
    }
    return issue;
  }

  /** Someone comments on the issue now (its updated_at moves); options as addNote's but `diff`. */
  commentOnIssue(project: string, iid: number, author: string, body: string, options: NoteOptions = {}): FakeNote {
    return this.writeNote(this.issue(project, iid), author, body, { ...options, diff: undefined });
  }

  /**
   * Someone edits a comment on the issue now: its body, and its updated_at and the issue's move (GitLab
   * touches the noteable whenever a note is saved). Throws for a system note (GitLab's own: not editable).
   */
  editIssueNote(project: string, iid: number, noteId: number, body: string): FakeNote {
    const issue = this.issue(project, iid);
    const note = issue.notes.find((n) => n.id === noteId);
    if (!note || note.system) {
      throw new Error(`fake GitLab has no editable note ${noteId} on ${project}#${iid}`);
    }
    note.body = body;
    this.touch(note);
    this.touch(issue);
    return note;
  }

  /**
   * Someone adds a label to the issue now: its labels, a resource label event and updated_at change
   * (nothing happens when the issue already has it, as in GitLab).
   */
  labelIssue(project: string, iid: number, label: string, by: string): void {
    const issue = this.issue(project, iid);
    this.relabel(issue, [...issue.labels, label], by);
  }

  /** Someone removes a label from the issue now (as labelIssue; nothing happens when it has not got it). */
  unlabelIssue(project: string, iid: number, label: string, by: string): void {
    const issue = this.issue(project, iid);
    this.relabel(
      issue,
      issue.labels.filter((l) => l !== label),
      by,
    );
  }

  /** Someone closes or reopens the issue now, as PUT …/issues/:iid does (a system note; updated_at moves). */
  setIssueState(project: string, iid: number, state: FakeIssue['state'], by: string): void {
    this.changeIssueState(this.issue(project, iid), state, by);
  }

  /** Deletes the issue: the API answers 404 for it from now on. */
  removeIssue(project: string, iid: number): void {
    this.issues.delete(`${this.issue(project, iid).projectId}#${iid}`);
  }

  // ---- state: users and members ---------------------------------------------------------------

  /** A user's id (users exist from their first mention; the token's user is 1). */
  userId(username: string): number {
    if (!this.users.has(username)) {
      this.users.set(username, this.users.size + 1);
    }
    return this.users.get(username)!;
  }

  /** Makes the user a bot account (GET /users/:id answers `bot: true`), or with false a human again. */
  markBot(username: string, bot = true): void {
    if (bot) {
      this.bots.add(this.seen(username));
    } else {
      this.bots.delete(this.seen(username));
    }
  }

  /** Makes the user a member of the project with that role (replacing the one it had). */
  setMember(project: string, username: string, accessLevel: FakeAccessLevel): void {
    const key = `${this.project(project).id}@${this.seen(username)}`;
    this.members.set(key, { accessLevel, createdAt: this.members.get(key)?.createdAt ?? this.now() });
  }

  /** The user is no member of the project any more (the members API answers 404 for it). */
  removeMember(project: string, username: string): void {
    this.members.delete(`${this.project(project).id}@${username}`);
  }

  // ---- faults, rate limit, counting -----------------------------------------------------------

  /** The next `count` requests (those `match`ing, if given) answer `status`, once past the token check. */
  failNext(count: number, status = 502, match?: FakeGitLabMatch): void {
    this.addFaults(count, { kind: 'status', status }, match);
  }

  /** The next `count` requests (those `match`ing) wait `ms` before being handled. */
  delayNext(count: number, ms: number, match?: FakeGitLabMatch): void {
    this.addFaults(count, { kind: 'delay', ms }, match);
  }

  /** The next `count` requests (those `match`ing) are never answered (until the client gives up or close()). */
  hangNext(count: number, match?: FakeGitLabMatch): void {
    this.addFaults(count, { kind: 'hang' }, match);
  }

  /** Spends the budget: 429 with Retry-After until `resetInSeconds` from now, when it refills. */
  exhaust(resetInSeconds: number): void {
    this.budget.used = this.budget.limit;
    this.budget.resetAt = Date.now() + resetInSeconds * 1000;
  }

  /** Requests left in the current window. */
  remaining(): number {
    const budget = this.currentBudget();
    return Math.max(0, budget.limit - budget.used);
  }

  /** Requests in total and by method, whatever their status: `{ total: 3, GET: 2, POST: 1 }`. */
  counts(): Record<string, number> & { total: number } {
    const counts: Record<string, number> & { total: number } = { total: this.requests.length };
    for (const request of this.requests) {
      counts[request.method] = (counts[request.method] ?? 0) + 1;
    }
    return counts;
  }

  resetCounts(): void {
    this.requests.length = 0;
  }

  private addFaults(count: number, fault: Fault, match: FakeGitLabMatch | undefined): void {
    for (let i = 0; i < count; i++) {
      this.faults.push({ fault, match });
    }
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const record = { at: Date.now(), method, path: url.pathname, query: queryRecord(url.searchParams), status: 0 };
    this.requests.push(record);
    const send = ({ status, body, headers }: Answer) => {
      record.status = status;
      if (!res.destroyed) {
        const text = typeof body === 'string';
        const type = text ? 'text/plain; charset=utf-8' : 'application/json';
        res.writeHead(status, { 'Content-Type': type, ...this.rateHeaders(), ...headers });
        res.end(text ? body : JSON.stringify(body));
      }
    };

    const index = this.faults.findIndex((f) => !f.match || matches(f.match, method, url.pathname));
    const fault = index >= 0 ? this.faults.splice(index, 1)[0].fault : null;
    if (fault?.kind === 'delay') {
      await new Promise((resolve) => setTimeout(resolve, fault.ms));
    }
    if (fault?.kind === 'hang') {
      return;
    }
    const privateToken = req.headers['private-token'];
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if ((typeof privateToken === 'string' ? privateToken : bearer) !== this.token) {
      return send({ body: { message: '401 Unauthorized' }, status: 401 });
    }
    if (fault?.kind === 'status') {
      return send({ body: { message: `${fault.status} Fake GitLab fault` }, status: fault.status });
    }
    const budget = this.currentBudget();
    if (budget.used >= budget.limit) {
      // GitLab's throttle (Rack::Attack) answers its configurable response text, "Retry later", as plain text.
      const retryAfter = String(Math.max(1, Math.ceil((budget.resetAt - Date.now()) / 1000)));
      return send({ body: 'Retry later\n', headers: { 'Retry-After': retryAfter }, status: 429 });
    }
    budget.used++;
    const input = () => parseInput(Buffer.concat(chunks).toString('utf8'), req.headers['content-type']);
    try {
      for (const [verb, pattern, handler] of this.routes) {
        const m = pattern.exec(url.pathname);
        if (m && verb === method) {
          return send(handler({ input, query: url.searchParams, url }, m));
        }
      }
      this.unhandled.push({ method, path: url.pathname });
      // GitLab's catch-all route answers `error`; `message` too, like the other errors here.
      send({ body: { error: '404 Not Found', message: '404 Not Found' }, status: 404 });
    } catch (error) {
      if (!(error instanceof ApiError)) {
        console.error('fake GitLab:', error);
      }
      const failure = error instanceof ApiError ? error : new ApiError(500, { message: '500 Internal Server Error' });
      send({ body: failure.body, status: failure.status });
    }
  }

  /**
   * A page of a list: `page` (default 1), `per_page` (default 20, at most 100), GitLab's x-* headers
   * (x-next-page empty on the last page, x-prev-page on the first) and a Link header whose URLs keep
   * the request's other parameters.
   */
  private paginate(c: Context, items: unknown[]): Answer {
    const wanted = Number(c.query.get('per_page'));
    const perPage = Number.isInteger(wanted) && wanted > 0 ? Math.min(100, wanted) : 20;
    const asked = Number(c.query.get('page'));
    const page = Number.isInteger(asked) && asked > 0 ? asked : 1;
    const pages = Math.max(1, Math.ceil(items.length / perPage));
    const prev = page > 1 ? String(Math.min(page - 1, pages)) : '';
    const next = page < pages ? String(page + 1) : '';
    const link = (n: string, rel: string) => {
      const target = new URL(`${c.url.pathname}${c.url.search}`, this.url);
      target.searchParams.set('page', n);
      target.searchParams.set('per_page', String(perPage));
      return `<${target.toString()}>; rel="${rel}"`;
    };
    const links = [
      prev && link(prev, 'prev'),
      next && link(next, 'next'),
      link('1', 'first'),
      link(String(pages), 'last'),
    ];
    const headers = { 'x-next-page': next, 'x-page': String(page), 'x-per-page': String(perPage), 'x-prev-page': prev };
    return {
      body: items.slice((page - 1) * perPage, page * perPage),
      headers: {
        ...headers,
        Link: links.filter((l) => l !== '').join(', '),
        'x-total': String(items.length),
        'x-total-pages': String(pages),
      },
      status: 200,
    };
  }

  private listMergeRequests(c: Context, project: FakeProject): Answer {
    const q = c.query;
    const state = oneOf(q, 'state', ['opened', 'closed', 'locked', 'merged', 'all'], 'all');
    const iids = iidsOf(q);
    const after = timeParam(q, 'updated_after');
    const found = this.of(this.mergeRequests, project).filter(
      (mr) =>
        (state === 'all' || mr.state === state) &&
        (iids === null || iids.includes(mr.iid)) &&
        (q.get('source_branch') === null || mr.sourceBranch === q.get('source_branch')) &&
        (q.get('target_branch') === null || mr.targetBranch === q.get('target_branch')) &&
        (after === null || Date.parse(mr.updatedAt) >= after),
    );
    // The list has no head_pipeline (nor diff_refs): only the single-MR GET does.
    return this.paginate(
      c,
      ordered(found, q).map((mr) => this.mergeRequestJson(mr, false)),
    );
  }

  private createMergeRequest(c: Context, project: FakeProject): Answer {
    const input = c.input();
    requireStrings(input, ['source_branch', 'target_branch', 'title']);
    const [source, target, title] = [input.source_branch, input.target_branch, input.title] as string[];
    if (source === target) {
      throw new ApiError(422, { message: ["You can't use same project/branch for source and target"] });
    }
    const open = this.of(this.mergeRequests, project).find(
      (mr) => mr.state === 'opened' && mr.sourceBranch === source && mr.targetBranch === target,
    );
    if (open) {
      const message = `Another open merge request already exists for this source branch: !${open.iid}`;
      throw new ApiError(409, { message: [message] });
    }
    // GitLab's create endpoint has no `draft` attribute (a draft is a "Draft: " title): it is ignored.
    const description = typeof input.description === 'string' ? input.description : '';
    const labels = labelsParam(input.labels) ?? [];
    const mr = this.addMergeRequest({
      description,
      labels,
      project: project.path,
      sourceBranch: source,
      targetBranch: target,
      title,
    });
    return ok(this.mergeRequestJson(mr, true), 201);
  }

  private listNotes(c: Context, target: Noteable): Answer {
    return this.paginate(
      c,
      ordered(target.notes, c.query).map((n) => this.noteJson(n, target)),
    );
  }

  private postNote(c: Context, target: Noteable): Answer {
    const input = c.input();
    requireStrings(input, ['body']);
    return ok(this.noteJson(this.writeNote(target, this.username, input.body as string, {}), target), 201);
  }

  /** Threads in creation order, each with its notes oldest first. */
  private listDiscussions(c: Context, target: Noteable): Answer {
    const ids = [...new Set(target.notes.map((n) => n.discussionId))];
    const discussions = ids.map((id) => {
      const notes = target.notes.filter((n) => n.discussionId === id);
      return { id, individual_note: notes[0].type === null, notes: notes.map((n) => this.noteJson(n, target)) };
    });
    return this.paginate(c, discussions);
  }

  private listPipelines(c: Context, mr: FakeMergeRequest): Answer {
    return this.paginate(
      c,
      this.pipelinesOf(mr).map((p) => this.pipelineJson(p, false)),
    );
  }

  /** A pipeline's jobs, newest first; `scope[]` keeps those in the statuses given (400 for an unknown one). */
  private listJobs(c: Context, pipeline: FakePipeline): Answer {
    const scopes = [...c.query.getAll('scope[]'), ...c.query.getAll('scope')];
    if (scopes.some((s) => !STATUSES.includes(s))) {
      throw badRequest('scope does not have a valid value');
    }
    const jobs = pipeline.jobs.filter((j) => scopes.length === 0 || scopes.includes(j.status));
    return this.paginate(
      c,
      jobs.sort((a, b) => b.id - a.id).map((j) => this.jobJson(pipeline, j)),
    );
  }

  /** Labels must all be on the issue, exactly as written (None: no label; Any: some label). */
  private listIssues(c: Context, project: FakeProject): Answer {
    const q = c.query;
    const state = oneOf(q, 'state', ['opened', 'closed', 'all'], 'all');
    const iids = iidsOf(q);
    const after = timeParam(q, 'updated_after');
    const labels = labelsParam(q.get('labels') ?? undefined) ?? [];
    const search = q.get('search')?.toLowerCase() ?? null;
    const labelled = (i: FakeIssue, l: string) =>
      l === 'None' ? i.labels.length === 0 : l === 'Any' ? i.labels.length > 0 : i.labels.includes(l);
    const found = this.of(this.issues, project).filter(
      (i) =>
        (state === 'all' || i.state === state) &&
        (iids === null || iids.includes(i.iid)) &&
        (after === null || Date.parse(i.updatedAt) >= after) &&
        labels.every((l) => labelled(i, l)) &&
        (search === null || `${i.title}\n${i.description ?? ''}`.toLowerCase().includes(search)),
    );
    return this.paginate(
      c,
      ordered(found, q).map((i) => this.issueJson(i)),
    );
  }

  /**
   * PUT an issue: closes or reopens it (GitLab writes a system note), retitles or relabels it (`labels`
   * replaces them, then `add_labels` and `remove_labels` apply; resource label events for the token's
   * user). updated_at moves when something changed, as GitLab saves only then.
   */
  private updateIssue(c: Context, issue: FakeIssue): Answer {
    const input = c.input();
    const known = ['state_event', 'title', 'description', 'labels', 'add_labels', 'remove_labels'];
    if (!known.some((k) => k in input)) {
      throw badRequest(`${known.join(', ')} are missing, at least one parameter must be provided`);
    }
    if (input.state_event !== undefined && input.state_event !== 'close' && input.state_event !== 'reopen') {
      throw badRequest('state_event does not have a valid value');
    }
    const title = typeof input.title === 'string' ? input.title : issue.title;
    const description = typeof input.description === 'string' ? input.description : issue.description;
    if (title !== issue.title || description !== issue.description) {
      issue.title = title;
      issue.description = description;
      this.touch(issue);
    }
    const remove = labelsParam(input.remove_labels) ?? [];
    const labels = [...(labelsParam(input.labels) ?? issue.labels), ...(labelsParam(input.add_labels) ?? [])];
    this.relabel(
      issue,
      labels.filter((l) => !remove.includes(l)),
      this.username,
    );
    if (input.state_event !== undefined) {
      this.changeIssueState(issue, input.state_event === 'close' ? 'closed' : 'opened', this.username);
    }
    return ok(this.issueJson(issue));
  }

  /** Label events oldest first. */
  private listLabelEvents(c: Context, issue: FakeIssue): Answer {
    return this.paginate(
      c,
      issue.labelEvents.map((e) => this.labelEventJson(issue, e)),
    );
  }

  /**
   * `username` (exact, any case) finds one user; without it, every user the fake knows (id descending,
   * GitLab's default order). A regular user's token gets GitLab's basic user fields: no `bot`.
   */
  private listUsers(c: Context): Answer {
    const wanted = c.query.get('username')?.toLowerCase() ?? null;
    const found = [...this.users]
      .filter(([username]) => wanted === null || username.toLowerCase() === wanted)
      .sort(([, a], [, b]) => b - a);
    return this.paginate(
      c,
      found.map(([username]) => ({ ...this.userJson(username), locked: false })),
    );
  }

  // ---- lookups --------------------------------------------------------------------------------

  /** `:id`: a numeric id or a URL-encoded path_with_namespace (any case). */
  private resolve(raw: string): FakeProject {
    const id = safeDecode(raw);
    const project = /^\d+$/.test(id)
      ? this.projects.find((p) => p.id === Number(id))
      : this.projects.find((p) => p.path.toLowerCase() === id.toLowerCase());
    if (!project) {
      throw new ApiError(404, { message: '404 Project Not Found' });
    }
    if (project.forbidden) {
      throw new ApiError(403, { message: '403 Forbidden' });
    }
    return project;
  }

  /** A username by its `:id` (404 User Not Found, as GitLab answers). */
  private findUser(raw: string): string {
    const found = [...this.users].find(([, id]) => id === Number(raw));
    return found?.[0] ?? throwing(new ApiError(404, { message: '404 User Not Found' }));
  }

  private findLabelEvent(m: RegExpExecArray): Record<string, unknown> {
    const issue = this.findIssue(m);
    const event = issue.labelEvents.find((e) => e.id === Number(m[3])) ?? throwing(notFound());
    return this.labelEventJson(issue, event);
  }

  private findMergeRequest(m: RegExpExecArray): FakeMergeRequest {
    return this.mergeRequests.get(`${this.resolve(m[1]).id}!${Number(m[2])}`) ?? throwing(notFound());
  }

  private findIssue(m: RegExpExecArray): FakeIssue {
    return this.issues.get(`${this.resolve(m[1]).id}#${Number(m[2])}`) ?? throwing(notFound());
  }

  private findPipeline(m: RegExpExecArray): FakePipeline {
    const pipeline = this.pipelines.get(Number(m[2]));
    return pipeline?.projectId === this.resolve(m[1]).id ? pipeline : throwing(notFound());
  }

  private findJob(m: RegExpExecArray): [FakePipeline, FakeJob] {
    const project = this.resolve(m[1]);
    for (const pipeline of this.pipelines.values()) {
      const job = pipeline.jobs.find((j) => j.id === Number(m[2]));
      if (job && pipeline.projectId === project.id) {
        return [pipeline, job];
      }
    }
    throw notFound();
  }

  private of<T extends { projectId: number }>(map: Map<string, T>, project: FakeProject): T[] {
    return [...map.values()].filter((item) => item.projectId === project.id);
  }

  /** The MR's pipelines, newest first. */
  private pipelinesOf(mr: FakeMergeRequest): FakePipeline[] {
    return [...this.pipelines.values()]
      .filter((p) => p.projectId === mr.projectId && p.mergeRequestIid === mr.iid)
      .sort((a, b) => b.id - a.id);
  }

  // ---- writing --------------------------------------------------------------------------------

  private writeNote(target: Noteable, author: string, body: string, options: NoteOptions): FakeNote {
    const onMergeRequest = 'sourceBranch' in target;
    const thread = options.replyTo ? target.notes.filter((n) => n.discussionId === options.replyTo) : [];
    if (options.replyTo && thread.length === 0) {
      throw new Error(`fake GitLab has no discussion ${options.replyTo} on ${target.project} ${target.iid}`);
    }
    if (thread[0]?.type === null) {
      // A reply makes a thread of a plain comment (resolvable on an MR).
      thread[0].type = 'DiscussionNote';
      thread[0].resolvable = onMergeRequest && !thread[0].system;
    }
    const id = this.nextId++;
    const type: FakeNote['type'] = options.diff ? 'DiffNote' : (thread[0]?.type ?? null);
    const diff = options.diff && { newLine: options.diff.line, newPath: options.diff.path, oldLine: null };
    const createdAt = options.createdAt ?? this.now();
    const note: FakeNote = {
      author: this.seen(author),
      body,
      createdAt,
      discussionId: thread[0]?.discussionId ?? sha(`discussion:${id}`),
      id,
      noteableIid: target.iid,
      noteableType: onMergeRequest ? 'MergeRequest' : 'Issue',
      // A reply in a diff thread is a DiffNote on the same line.
      position: diff ? { ...diff, oldPath: diff.newPath } : (thread[0]?.position ?? null),
      resolvable: onMergeRequest && !options.system && type !== null,
      resolved: false,
      system: options.system ?? false,
      type,
      updatedAt: createdAt,
    };
    target.notes.push(note);
    this.touch(target); // GitLab touches the noteable for every note
    return note;
  }

  /**
   * Sets the issue's labels (duplicates dropped, the order kept). When that adds or removes some, the
   * issue's updated_at moves and GitLab's resource label events are recorded: the adds, then the
   * removes, all at that time. Returns whether anything changed.
   */
  private relabel(issue: FakeIssue, wanted: string[], by: string): boolean {
    const labels = [...new Set(wanted)];
    const added = labels.filter((l) => !issue.labels.includes(l));
    const removed = issue.labels.filter((l) => !labels.includes(l));
    if (added.length === 0 && removed.length === 0) {
      return false;
    }
    issue.labels = labels;
    this.touch(issue);
    const at = issue.updatedAt;
    issue.labelEvents.push(
      ...added.map((l) => this.labelEvent(issue.projectId, 'add', l, by, at)),
      ...removed.map((l) => this.labelEvent(issue.projectId, 'remove', l, by, at)),
    );
    return true;
  }

  private labelEvent(
    projectId: number,
    action: FakeLabelEvent['action'],
    label: string,
    by: string,
    at: string,
  ): FakeLabelEvent {
    this.labelId(projectId, label); // the label exists from now on, with a stable id
    return { action, createdAt: at, id: this.nextId++, label, user: this.seen(by) };
  }

  private labelId(projectId: number, name: string): number {
    const key = `${projectId}~${name}`;
    if (!this.labels.has(key)) {
      this.labels.set(key, this.nextId++);
    }
    return this.labels.get(key)!;
  }

  /** Closes or reopens the issue (closed_at, closed_by; a system note, which touches it); nothing when it already is. */
  private changeIssueState(issue: FakeIssue, state: FakeIssue['state'], by: string): void {
    if (issue.state === state) {
      return;
    }
    const closing = state === 'closed';
    issue.state = state;
    issue.closedAt = closing ? this.now() : null;
    issue.closedBy = closing ? this.seen(by) : null;
    this.writeNote(issue, by, closing ? 'closed' : 'reopened', { system: true });
  }

  /** Registers a user at its first mention (GitLab's users have ids: the users API finds them). */
  private seen(username: string): string {
    this.userId(username);
    return username;
  }

  private now(): string {
    return new Date().toISOString();
  }

  /** Bumps updated_at, strictly later than before even within a millisecond, so "updated after" checks are reliable. */
  private touch(item: { updatedAt: string }): void {
    item.updatedAt = new Date(Math.max(Date.now(), Date.parse(item.updatedAt) + 1)).toISOString();
  }

  private currentBudget(): { limit: number; used: number; resetAt: number } {
    if (Date.now() >= this.budget.resetAt) {
      this.budget.used = 0;
      this.budget.resetAt = Date.now() + WINDOW_MS;
    }
    return this.budget;
  }

  /** GitLab's documented rate-limit headers, on every answer. */
  private rateHeaders(): Record<string, string> {
    const { limit, used, resetAt } = this.currentBudget();
    return {
      'RateLimit-Limit': String(limit),
      'RateLimit-Name': 'throttle_authenticated_api',
      'RateLimit-Observed': String(used),
      'RateLimit-Remaining': String(Math.max(0, limit - used)),
      'RateLimit-Reset': String(Math.ceil(resetAt / 1000)),
      'RateLimit-ResetTime': new Date(resetAt).toUTCString(),
    };
  }

  // ---- JSON as the API writes it --------------------------------------------------------------

  private userJson(username: string): Record<string, unknown> {
    return { id: this.userId(username), name: username, state: 'active', username, web_url: `${this.url}/${username}` };
  }

  /** GET /users/:id and GET /user: the basic fields, and `bot`. */
  private userDetailJson(username: string): Record<string, unknown> {
    return { ...this.userJson(username), bot: this.bots.has(username), locked: false };
  }

  /** GET …/members[/all]/:user_id: 404 Not found (GitLab's RecordNotFound answer) for a non-member. */
  private memberJson(project: FakeProject, rawUserId: string): Record<string, unknown> {
    const username = [...this.users].find(([, id]) => id === Number(rawUserId))?.[0];
    const member = username === undefined ? undefined : this.members.get(`${project.id}@${username}`);
    if (username === undefined || member === undefined) {
      throw notFound();
    }
    return {
      ...this.userJson(username),
      access_level: member.accessLevel,
      created_at: member.createdAt,
      expires_at: null,
      membership_state: 'active',
    };
  }

  private labelEventJson(issue: FakeIssue, event: FakeLabelEvent): Record<string, unknown> {
    // A label created on the fly has GitLab's default color and no description (null).
    const label = {
      color: LABEL_COLOR,
      description: null,
      id: this.labelId(issue.projectId, event.label),
      name: event.label,
    };
    return {
      action: event.action,
      created_at: event.createdAt,
      id: event.id,
      label,
      resource_id: issue.id,
      resource_type: 'Issue',
      user: this.userJson(event.user),
    };
  }

  private projectJson(project: FakeProject): Record<string, unknown> {
    const web = `${this.url}/${project.path}`;
    const name = project.path.split('/').pop();
    const namespace = { full_path: project.path.split('/').slice(0, -1).join('/'), kind: 'group' };
    return {
      default_branch: project.defaultBranch,
      http_url_to_repo: `${web}.git`,
      id: project.id,
      name,
      namespace,
      path: name,
      path_with_namespace: project.path,
      web_url: web,
    };
  }

  private mergeRequestJson(mr: FakeMergeRequest, single: boolean): Record<string, unknown> {
    const detailed = detailedStatus(mr);
    const draft = DRAFT.test(mr.title);
    const head = single ? (this.pipelinesOf(mr)[0] ?? null) : null;
    const base = sha(`${mr.project}:${mr.targetBranch}`);
    return {
      author: this.userJson(mr.author),
      blocking_discussions_resolved: mr.notes.every((n) => !n.resolvable || n.resolved),
      closed_at: mr.closedAt,
      created_at: mr.createdAt,
      description: mr.description,
      detailed_merge_status: detailed,
      draft,
      has_conflicts: mr.hasConflicts,
      id: mr.id,
      iid: mr.iid,
      labels: [...mr.labels],
      merge_status: legacyMergeStatus(mr),
      merged_at: mr.mergedAt,
      project_id: mr.projectId,
      sha: mr.sha,
      source_branch: mr.sourceBranch,
      source_project_id: mr.projectId,
      state: mr.state,
      target_branch: mr.targetBranch,
      target_project_id: mr.projectId,
      title: mr.title,
      updated_at: mr.updatedAt,
      user_notes_count: mr.notes.filter((n) => !n.system).length,
      web_url: `${this.url}/${mr.project}/-/merge_requests/${mr.iid}`,
      work_in_progress: draft,
      ...(single
        ? {
            diff_refs: { base_sha: base, head_sha: mr.sha, start_sha: base },
            head_pipeline: head && this.pipelineJson(head, true),
          }
        : {}),
    };
  }

  private noteJson(note: FakeNote, parent: Noteable): Record<string, unknown> {
    const position = note.position && {
      head_sha: 'sha' in parent ? parent.sha : null,
      new_line: note.position.newLine,
      new_path: note.position.newPath,
      old_line: note.position.oldLine,
      old_path: note.position.oldPath,
      position_type: 'text',
    };
    return {
      author: this.userJson(note.author),
      body: note.body,
      created_at: note.createdAt,
      id: note.id,
      noteable_id: parent.id,
      noteable_iid: note.noteableIid,
      noteable_type: note.noteableType,
      project_id: parent.projectId,
      resolvable: note.resolvable,
      system: note.system,
      type: note.type,
      updated_at: note.updatedAt,
      // GitLab shows `resolved` on resolvable notes only, and `position` on diff notes only.
      ...(note.resolvable ? { resolved: note.resolved, resolved_by: null } : {}),
      ...(position ? { position } : {}),
    };
  }

  private pipelineJson(pipeline: FakePipeline, full: boolean): Record<string, unknown> {
    return {
      created_at: pipeline.createdAt,
      id: pipeline.id,
      iid: pipeline.iid,
      project_id: pipeline.projectId,
      ref: pipeline.ref,
      sha: pipeline.sha,
      source: pipeline.source,
      status: pipeline.status,
      updated_at: pipeline.updatedAt,
      web_url: `${this.url}/${pipeline.project}/-/pipelines/${pipeline.id}`,
      ...(full ? { finished_at: pipeline.finishedAt, started_at: pipeline.startedAt, tag: false } : {}),
    };
  }

  private jobJson(pipeline: FakePipeline, job: FakeJob): Record<string, unknown> {
    return {
      allow_failure: job.allowFailure,
      created_at: job.createdAt,
      finished_at: job.finishedAt,
      id: job.id,
      name: job.name,
      pipeline: this.pipelineJson(pipeline, false),
      ref: pipeline.ref,
      stage: job.stage,
      started_at: job.startedAt,
      status: job.status,
      web_url: `${this.url}/${pipeline.project}/-/jobs/${job.id}`,
      ...(job.status === 'failed' ? { failure_reason: 'script_failure' } : {}),
    };
  }

  private issueJson(issue: FakeIssue): Record<string, unknown> {
    return {
      author: this.userJson(issue.author),
      closed_at: issue.closedAt,
      closed_by: issue.closedBy === null ? null : this.userJson(issue.closedBy),
      created_at: issue.createdAt,
      description: issue.description,
      id: issue.id,
      iid: issue.iid,
      labels: [...issue.labels],
      project_id: issue.projectId,
      state: issue.state,
      title: issue.title,
      updated_at: issue.updatedAt,
      user_notes_count: issue.notes.filter((n) => !n.system).length,
      web_url: `${this.url}/${issue.project}/-/issues/${issue.iid}`,
    };
  }
}

// ---- webhooks ---------------------------------------------------------------------------------
// Payloads as GitLab's webhook docs show them (the fields a receiver reads). Record times in them are
// written "2026-01-02 03:04:05 UTC", not the API's ISO 8601: GitLab's hooks do that.

export type GitLabWebhookEvent = 'Merge Request Hook' | 'Note Hook' | 'Pipeline Hook' | 'Issue Hook';

/** Delivers a webhook as GitLab does: a JSON POST with its X-Gitlab-* headers (no X-Gitlab-Token when `secret` is null). */
export async function sendGitLabWebhook(
  targetUrl: string,
  event: GitLabWebhookEvent,
  payload: unknown,
  secret: string | null,
): Promise<{ status: number; body: string }> {
  const response = await fetch(targetUrl, {
    body: JSON.stringify(payload),
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'GitLab/17.0.0',
      'X-Gitlab-Event': event,
      'X-Gitlab-Event-UUID': randomUUID(),
      'X-Gitlab-Webhook-UUID': randomUUID(),
      ...(secret === null ? {} : { 'X-Gitlab-Token': secret }),
    },
    method: 'POST',
  });
  return { body: await response.text(), status: response.status };
}

/** A Merge Request Hook payload for the MR's current state. */
export function mergeRequestHook(
  server: FakeGitLabServer,
  project: string,
  iid: number,
  action: 'open' | 'close' | 'reopen' | 'update' | 'merge' | 'approved' | 'unapproved' = 'update',
): Record<string, unknown> {
  const mr = server.mergeRequest(project, iid);
  return {
    ...hookBase(server, project, 'merge_request', mr.author),
    changes: {},
    labels: mr.labels.map((title) => ({ title })),
    object_attributes: { ...hookMergeRequest(server, mr), action },
  };
}

/** A Note Hook payload for a note on an MR or an issue. */
export function noteHook(
  server: FakeGitLabServer,
  project: string,
  noteableType: 'MergeRequest' | 'Issue',
  iid: number,
  note: FakeNote,
): Record<string, unknown> {
  const target = noteableType === 'MergeRequest' ? server.mergeRequest(project, iid) : server.issue(project, iid);
  const url = `${server.url}/${target.project}/-/${'sha' in target ? 'merge_requests' : 'issues'}/${iid}`;
  const position = note.position && {
    new_line: note.position.newLine,
    new_path: note.position.newPath,
    old_line: note.position.oldLine,
    old_path: note.position.oldPath,
  };
  return {
    ...hookBase(server, project, 'note', note.author),
    object_attributes: {
      action: 'create',
      author_id: server.userId(note.author),
      created_at: utc(note.createdAt),
      discussion_id: note.discussionId,
      id: note.id,
      note: note.body,
      noteable_id: target.id,
      noteable_type: noteableType,
      position,
      project_id: target.projectId,
      system: note.system,
      type: note.type,
      updated_at: utc(note.updatedAt),
      url: `${url}#note_${note.id}`,
    },
    project_id: target.projectId,
    ...('sha' in target ? { merge_request: hookMergeRequest(server, target) } : { issue: hookIssue(server, target) }),
  };
}

/** A Pipeline Hook payload; `merge_request` is null with no MR (GitLab's is, for a branch pipeline). */
export function pipelineHook(
  server: FakeGitLabServer,
  project: string,
  pipeline: FakePipeline,
  mrIid: number | null,
): Record<string, unknown> {
  const mr = mrIid === null ? null : server.mergeRequest(project, mrIid);
  const builds = pipeline.jobs.map((job) => ({
    allow_failure: job.allowFailure,
    created_at: utc(job.createdAt),
    failure_reason: job.status === 'failed' ? 'script_failure' : null,
    finished_at: job.finishedAt && utc(job.finishedAt),
    id: job.id,
    name: job.name,
    stage: job.stage,
    started_at: job.startedAt && utc(job.startedAt),
    status: job.status,
  }));
  return {
    ...hookBase(server, project, 'pipeline', server.username),
    builds,
    commit: { id: pipeline.sha, url: `${server.url}/${pipeline.project}/-/commit/${pipeline.sha}` },
    merge_request:
      mr &&
      pick(
        hookMergeRequest(server, mr),
        'id iid title source_branch source_project_id target_branch target_project_id state merge_status detailed_merge_status url',
      ),
    object_attributes: {
      created_at: utc(pipeline.createdAt),
      detailed_status: pipeline.status,
      finished_at: pipeline.finishedAt && utc(pipeline.finishedAt),
      id: pipeline.id,
      iid: pipeline.iid,
      ref: pipeline.ref,
      sha: pipeline.sha,
      source: pipeline.source,
      stages: [...new Set(pipeline.jobs.map((j) => j.stage))],
      status: pipeline.status,
      tag: false,
      url: `${server.url}/${pipeline.project}/-/pipelines/${pipeline.id}`,
    },
  };
}

/** An Issue Hook payload for the issue's current state. */
export function issueHook(
  server: FakeGitLabServer,
  project: string,
  iid: number,
  action: 'open' | 'close' | 'reopen' | 'update' = 'update',
): Record<string, unknown> {
  const issue = server.issue(project, iid);
  return {
    ...hookBase(server, project, 'issue', issue.author),
    changes: {},
    labels: issue.labels.map((title) => ({ title })),
    object_attributes: { ...hookIssue(server, issue), action },
  };
}

/** What every hook has: its kind, who did it, and the project. */
function hookBase(server: FakeGitLabServer, path: string, kind: string, username: string): Record<string, unknown> {
  const project = server.project(path);
  const web = `${server.url}/${project.path}`;
  return {
    event_type: kind,
    object_kind: kind,
    project: {
      default_branch: project.defaultBranch,
      git_http_url: `${web}.git`,
      id: project.id,
      name: project.path.split('/').pop(),
      namespace: project.path.split('/').slice(0, -1).join('/'),
      path_with_namespace: project.path,
      web_url: web,
    },
    user: { email: '[REDACTED]', id: server.userId(username), name: username, username },
  };
}

function hookMergeRequest(server: FakeGitLabServer, mr: FakeMergeRequest): Record<string, unknown> {
  const url = `${server.url}/${mr.project}/-/merge_requests/${mr.iid}`;
  return {
    author_id: server.userId(mr.author),
    created_at: utc(mr.createdAt),
    description: mr.description,
    detailed_merge_status: detailedStatus(mr),
    draft: DRAFT.test(mr.title),
    head_pipeline_id: server.headPipeline(mr.project, mr.iid)?.id ?? null,
    id: mr.id,
    iid: mr.iid,
    last_commit: { id: mr.sha, title: mr.title, url: `${server.url}/${mr.project}/-/commit/${mr.sha}` },
    merge_status: legacyMergeStatus(mr),
    source_branch: mr.sourceBranch,
    source_project_id: mr.projectId,
    state: mr.state,
    target_branch: mr.targetBranch,
    target_project_id: mr.projectId,
    title: mr.title,
    updated_at: utc(mr.updatedAt),
    url,
    work_in_progress: DRAFT.test(mr.title),
  };
}

function hookIssue(server: FakeGitLabServer, issue: FakeIssue): Record<string, unknown> {
  return {
    author_id: server.userId(issue.author),
    closed_at: issue.closedAt && utc(issue.closedAt),
    created_at: utc(issue.createdAt),
    description: issue.description,
    id: issue.id,
    iid: issue.iid,
    labels: issue.labels.map((title) => ({ title })),
    project_id: issue.projectId,
    state: issue.state,
    title: issue.title,
    updated_at: utc(issue.updatedAt),
    url: `${server.url}/${issue.project}/-/issues/${issue.iid}`,
  };
}

// ---- helpers ----------------------------------------------------------------------------------

/** Not open → not_open; a forced status; a draft → draft_status; conflicts → conflict; else mergeable. */
function detailedStatus(mr: FakeMergeRequest): FakeDetailedMergeStatus {
  if (mr.state !== 'opened') {
    return 'not_open';
  }
  return mr.mergeStatus ?? (DRAFT.test(mr.title) ? 'draft_status' : mr.hasConflicts ? 'conflict' : 'mergeable');
}

/** The deprecated `merge_status`: about the git merge only (checking, unchecked, can(not)_be_merged). */
function legacyMergeStatus(mr: FakeMergeRequest): string {
  if (mr.state === 'opened' && (mr.mergeStatus === 'checking' || mr.mergeStatus === 'unchecked')) {
    return mr.mergeStatus;
  }
  return mr.hasConflicts ? 'cannot_be_merged' : 'can_be_merged';
}

/** `order_by` created_at (default) or updated_at, `sort` desc (default) or asc; ties by id. */
function ordered<T extends { id: number; createdAt: string; updatedAt: string }>(items: T[], q: URLSearchParams): T[] {
  const byUpdate = oneOf(q, 'order_by', ['created_at', 'updated_at'], 'created_at') === 'updated_at';
  const at = (item: T) => Date.parse(byUpdate ? item.updatedAt : item.createdAt);
  const sorted = [...items].sort((a, b) => at(a) - at(b) || a.id - b.id);
  return oneOf(q, 'sort', ['asc', 'desc'], 'desc') === 'asc' ? sorted : sorted.reverse();
}

/** A parameter that must be one of `values` (GitLab 400s anything else). */
function oneOf(q: URLSearchParams, name: string, values: string[], fallback: string): string {
  const value = q.get(name) ?? fallback;
  if (!values.includes(value)) {
    throw badRequest(`${name} does not have a valid value`);
  }
  return value;
}

/** `iids[]=1&iids[]=2` (or `iids=1`): null when absent. */
function iidsOf(q: URLSearchParams): number[] | null {
  const raw = [...q.getAll('iids[]'), ...q.getAll('iids')];
  if (raw.some((v) => !/^\d+$/.test(v))) {
    throw badRequest('iids is invalid');
  }
  return raw.length === 0 ? null : raw.map(Number);
}

/** An ISO 8601 time parameter as epoch ms: null when absent, 400 when unreadable. */
function timeParam(q: URLSearchParams, name: string): number | null {
  const value = q.get(name);
  const at = value === null ? null : Date.parse(value);
  if (at !== null && Number.isNaN(at)) {
    throw badRequest(`${name} is invalid`);
  }
  return at;
}

/** Labels as GitLab takes them: a comma-separated string or an array. */
function labelsParam(value: unknown): string[] | undefined {
  if (typeof value === 'string') {
    return value
      .split(',')
      .map((l) => l.trim())
      .filter((l) => l !== '');
  }
  return Array.isArray(value) ? value.map(String) : undefined;
}

/** Required string parameters: "title is missing" (absent) or "body is empty" (blank), joined as Grape does. */
function requireStrings(input: Record<string, unknown>, names: string[]): void {
  const problems = names.flatMap((name) => {
    const value = input[name];
    return typeof value !== 'string' ? [`${name} is missing`] : value.trim() === '' ? [`${name} is empty`] : [];
  });
  if (problems.length > 0) {
    throw badRequest(problems.join(', '));
  }
}

/** The body's parameters: a JSON object, or a form when the client sends one (GitLab takes both). */
function parseInput(raw: string, contentType: string | undefined): Record<string, unknown> {
  if (raw.trim() === '') {
    return {};
  }
  if (/application\/x-www-form-urlencoded/i.test(contentType ?? '')) {
    return Object.fromEntries(new URLSearchParams(raw));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('400 Bad request - the request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw badRequest('400 Bad request - the request body is not a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function queryRecord(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of params) {
    const previous = query[name];
    query[name] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  return query;
}

function matches(match: FakeGitLabMatch, method: string, path: string): boolean {
  const paths = [path, safeDecode(path)];
  const { path: wanted } = match;
  return (
    match.method.toUpperCase() === method &&
    paths.some((p) => (typeof wanted === 'string' ? p.includes(wanted) : wanted.test(p)))
  );
}

/** Some fields of an object: `pick(json, 'id iid title')`. */
function pick(source: Record<string, unknown>, keys: string): Record<string, unknown> {
  return Object.fromEntries(keys.split(' ').map((key) => [key, source[key]]));
}

function throwing(error: Error): never {
  throw error;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A time as GitLab's webhooks write a record's times: "2026-01-02 03:04:05 UTC". */
function utc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

function sha(seed: string): string {
  return createHash('sha1').update(seed).digest('hex');
}
