// Every status and kind name is written once, here, and used by the server, the CLI and the
// dashboard. Arrays are exported beside the union types so validators can enumerate them.

export const REQUIREMENT_STATUSES = ['todo', 'doing', 'waiting_confirmation', 'done', 'cancelled'] as const;
export type RequirementStatus = (typeof REQUIREMENT_STATUSES)[number];

export const PROVIDERS = ['codex', 'claude-code'] as const;
export type Provider = (typeof PROVIDERS)[number];

export const REASONING_EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/**
 * Where a model catalog entry comes from: Codex's own listing (`codex app-server`, model/list),
 * the Anthropic models endpoint Claude Code uses, Claude Code's aliases, the configuration's
 * extra models, or the built-in list served while a provider has never been listed.
 */
export const MODEL_SOURCES = [
  'codex_app_server',
  'anthropic_api',
  'claude_code_alias',
  'configuration',
  'builtin',
] as const;
export type ModelSource = (typeof MODEL_SOURCES)[number];

/**
 * What a Requirement create or edit response flags without refusing it. `budget_clamped`: an
 * agent's proposal asked for more budget than its tree has left (or for none), and got less.
 */
export const REQUIREMENT_WARNINGS = [
  'unknown_model',
  'unsupported_reasoning_effort',
  'budget_clamped',
  'no_commit_in_place',
] as const;
export type RequirementWarning = (typeof REQUIREMENT_WARNINGS)[number];

export const REQUIREMENT_CREATORS = ['human', 'rd_agent'] as const;
export type RequirementCreator = (typeof REQUIREMENT_CREATORS)[number];

export const SESSION_STATES = ['idle', 'running', 'waiting_human', 'failed', 'completed'] as const;
export type SessionState = (typeof SESSION_STATES)[number];

export const MESSAGE_AUTHORS = ['human', 'rd_agent', 'reviewer', 'system'] as const;
export type MessageAuthor = (typeof MESSAGE_AUTHORS)[number];

/**
 * What a message Agent Manager itself wrote says, as a stable code with its arguments, so the
 * dashboard writes it in the reader's language; the English `body` stays for agents and older clients.
 */
export const SYSTEM_MESSAGE_CODES = [
  'run.failed',
  'run.timed_out',
  'run.manager_stopped',
  'budget.reached',
  'budget.reached_ancestor',
  'dependency.met',
  'dependency.cancelled',
  'timer.fired',
  'github.pr_status',
  'github.pr_head',
  'github.ci_failed',
  'github.conflict',
  'github.issue_write_back_failed',
  'gitlab.mr_status',
  'gitlab.mr_head',
  'gitlab.ci_failed',
  'gitlab.conflict',
  'gitlab.issue_write_back_failed',
  'review.failed',
  'review.cancelled',
  'review_loop.clean',
  'review_loop.max_rounds',
  'landing.conflict',
  'landing.rebase_requested',
  'requirement.moved',
  'requirement.rewound',
] as const;
export type SystemMessageCode = (typeof SYSTEM_MESSAGE_CODES)[number];
/** A system message's arguments: plain values only (titles, ids, numbers), never sentences. */
export type SystemMessageArgs = Record<string, string | number | boolean | null>;

export const ATTACHMENT_KINDS = ['image', 'file'] as const;
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `none` turns the local token off (the banner and log warn on every start). */
export const AUTHENTICATION_MODES = ['token', 'none'] as const;
export type AuthenticationMode = (typeof AUTHENTICATION_MODES)[number];

/**
 * `auto` starts every agent in a sandbox that hides the workspaces' data (bubblewrap, Linux) when
 * the machine allows it, and says so once when it does not; `off` never does (restart required).
 */
/** What Agent Manager writes to an imported issue (issue 49 §3): nothing, its work (start, PR, land), or that and a cancellation. */
export const INTAKE_WRITE_BACK_MODES = ['work', 'work_and_cancel', 'off'] as const;
export type IntakeWriteBackMode = (typeof INTAKE_WRITE_BACK_MODES)[number];
/** What an issue taken in by label (issue 49 §4) becomes: a Requirement in TODO, or one started at once. */
export const INTAKE_START_MODES = ['todo', 'start'] as const;
export type IntakeStartMode = (typeof INTAKE_START_MODES)[number];

export const AGENT_ISOLATION_MODES = ['auto', 'off'] as const;
export type AgentIsolationMode = (typeof AGENT_ISOLATION_MODES)[number];

/**
 * How much of the network an agent run reaches (issue 45): `allow_list` (default), the hosts on
 * the allow-list (and the model API and Agent Manager); `offline`, the model API and Agent Manager
 * alone; `open`, everything (no network namespace, no proxy).
 */
/** A Requirement's preview (issue 48 §2): starting until ready, ready, exited by itself, stopped by someone. */
export const PREVIEW_STATES = ['starting', 'ready', 'exited', 'stopped'] as const;
export type PreviewState = (typeof PREVIEW_STATES)[number];

export const NETWORK_MODES = ['allow_list', 'open', 'offline'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

export const AGENT_ISOLATION_MECHANISMS = ['bubblewrap', 'seatbelt'] as const;
export type AgentIsolationMechanism = (typeof AGENT_ISOLATION_MECHANISMS)[number];

export const EVENT_ACTOR_KINDS = ['human', 'agent', 'trigger', 'system'] as const;
export type EventActorKind = (typeof EVENT_ACTOR_KINDS)[number];

export const PERSON_SOURCES = ['configuration', 'git', 'os'] as const;
export type PersonSource = (typeof PERSON_SOURCES)[number];

/** Requirement statuses after which no agent work happens any more. */
export const TERMINAL_REQUIREMENT_STATUSES: readonly RequirementStatus[] = ['done', 'cancelled'];

export const RUN_ROLES = ['rd', 'reviewer'] as const;
export type RunRole = (typeof RUN_ROLES)[number];

export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'timed_out', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TRACE_KINDS = [
  'lifecycle',
  'reasoning',
  'assistant_message',
  'tool_call',
  'tool_result',
  'error',
] as const;
export type TraceKind = (typeof TRACE_KINDS)[number];

export const TRACE_STATUSES = ['started', 'completed', 'failed'] as const;
export type TraceStatus = (typeof TRACE_STATUSES)[number];

export const INTERRUPT_MODES = ['stop', 'steer'] as const;
export type InterruptMode = (typeof INTERRUPT_MODES)[number];

/** What a dependency waits for: its Requirement confirmed done, or every PR of it merged. */
export const DEPENDENCY_CONDITIONS = ['done', 'merged'] as const;
export type DependencyCondition = (typeof DEPENDENCY_CONDITIONS)[number];

/** A dependency is `pending` until met, or `cancelled` when its Requirement was withdrawn. */
export const DEPENDENCY_STATES = ['pending', 'met', 'cancelled'] as const;
export type DependencyState = (typeof DEPENDENCY_STATES)[number];

export const PULL_REQUEST_STATUSES = ['draft', 'open', 'closed', 'merged'] as const;
/** Where a pull (GitHub) or merge (GitLab) request lives: chosen per remote by its host (issue 49 §5). */
export const FORGES = ['github', 'gitlab'] as const;
export type Forge = (typeof FORGES)[number];
/** How each forge writes a request's number: GitHub's `org/repo#12`, GitLab's `group/project!12`. */
export const FORGE_SIGNS: Readonly<Record<Forge, string>> = { github: '#', gitlab: '!' };
export type PullRequestStatus = (typeof PULL_REQUEST_STATUSES)[number];

export const TIMER_SCHEDULES = ['once', 'recurring'] as const;
export type TimerSchedule = (typeof TIMER_SCHEDULES)[number];

export const TIMER_STATUSES = ['active', 'completed', 'cancelled'] as const;
export type TimerStatus = (typeof TIMER_STATUSES)[number];

/** Who wrote a review comment or an answer in its thread: a person, or an agent run. */
export const REVIEW_AUTHOR_KINDS = ['person', 'agent'] as const;
export type ReviewAuthorKind = (typeof REVIEW_AUTHOR_KINDS)[number];

/** Which side of a diff a review comment is on: the agent's work (`new`) or the merge base (`old`). */
export const REVIEW_COMMENT_SIDES = ['new', 'old'] as const;
export type ReviewCommentSide = (typeof REVIEW_COMMENT_SIDES)[number];

/**
 * A review comment's thread (issue 46): a person's `draft` until sent as part of a review (`sent`);
 * `resolved` by the person or the agent, and reopened (`sent` again). Whether an import changed
 * its lines is beside the state (`outdated`): a thread the agent resolved by changing the line is both.
 */
export const REVIEW_COMMENT_STATES = ['draft', 'sent', 'resolved'] as const;
export type ReviewCommentState = (typeof REVIEW_COMMENT_STATES)[number];

/**
 * Why a checkpoint of a Requirement's working state was taken (issue 46 §5): at an RD run's start
 * or end, or just before a rewind (so that the rewind can itself be undone).
 */
export const CHECKPOINT_KINDS = ['run_start', 'run_end', 'rewind'] as const;
export type CheckpointKind = (typeof CHECKPOINT_KINDS)[number];

/** What an RD agent may do to a Requirement it proposed. */
export const AGENT_REQUIREMENT_ACTIONS = ['start', 'stop', 'delete', 'done'] as const;
export type AgentRequirementAction = (typeof AGENT_REQUIREMENT_ACTIONS)[number];

export const REVIEW_REQUEST_STATUSES = ['running', 'succeeded', 'failed', 'cancelled'] as const;
export type ReviewRequestStatus = (typeof REVIEW_REQUEST_STATUSES)[number];

/** Who asked for a review: a person, or a Requirement's cross-model review loop. */
export const REVIEW_REQUESTERS = ['human', 'review_loop'] as const;
export type ReviewRequester = (typeof REVIEW_REQUESTERS)[number];

/** What a reviewer's final line said: `REVIEW: FINDINGS` or `REVIEW: NO FINDINGS` (null: no verdict line). */
export const REVIEW_VERDICTS = ['findings', 'no_findings'] as const;
export type ReviewVerdict = (typeof REVIEW_VERDICTS)[number];

/**
 * Where a PR's review loop is: `off` (its Requirement has no autoReview, or the loop has not
 * reached it yet), `reviewing` (a round runs), `waiting_for_push` (the last round found
 * something), `clean` (a round found nothing: the loop ended), `max_rounds` (the last allowed
 * round still found something: the loop ended).
 */
export const AUTO_REVIEW_STATES = ['off', 'reviewing', 'waiting_for_push', 'clean', 'max_rounds'] as const;
export type AutoReviewState = (typeof AUTO_REVIEW_STATES)[number];

/** How a loop round ended; `failed` rounds (the reviewer failed or was cancelled) are not counted. */
export const AUTO_REVIEW_OUTCOMES = ['findings', 'no_findings', 'failed'] as const;
export type AutoReviewOutcome = (typeof AUTO_REVIEW_OUTCOMES)[number];

/**
 * Where a Requirement's agent works: `worktree`, its own git worktree and branch (the default in
 * a git workspace), or `in_place`, the person's own checkout (the only choice elsewhere).
 */
export const ISOLATION_MODES = ['worktree', 'in_place'] as const;
export type IsolationMode = (typeof ISOLATION_MODES)[number];

/**
 * How a `worktree` Requirement's working copy is made (issue 44): `own_repository`, a repository
 * of the agent's own that borrows the workspace's objects read-only (every new one), or
 * `linked_worktree`, a `git worktree` of the person's repository (made before issue 44; turned
 * into an own repository at its next run).
 */
export const WORKTREE_LAYOUTS = ['own_repository', 'linked_worktree'] as const;
export type WorktreeLayout = (typeof WORKTREE_LAYOUTS)[number];

export const CHANGED_FILE_STATUSES = ['added', 'modified', 'deleted', 'renamed'] as const;
export type ChangedFileStatus = (typeof CHANGED_FILE_STATUSES)[number];

/** How the PostgreSQL connection uses TLS: as the URL says (sslmode), required, or required and verified. */
export const DATABASE_TLS_MODES = ['url', 'require', 'verify'] as const;
export type DatabaseTlsMode = (typeof DATABASE_TLS_MODES)[number];

/**
 * How a Requirement's branch lands (issue 28): `merge` (a merge commit on the base), `squash` (one
 * commit), `rebase` (its commits replayed on the base), all local; `pull_request` pushes it and
 * opens a PR on GitHub.
 */
export const LAND_METHODS = ['merge', 'squash', 'rebase', 'pull_request'] as const;
export type LandMethod = (typeof LAND_METHODS)[number];
/** The local ones: the base branch moves in the repository. */
export const LOCAL_LAND_METHODS = ['merge', 'squash', 'rebase'] as const;
export type LocalLandMethod = (typeof LOCAL_LAND_METHODS)[number];
/** The land methods that write one commit message of their own (a rebase keeps each commit's). */
export const MESSAGE_LAND_METHODS = ['merge', 'squash'] as const;
export type MessageLandMethod = (typeof MESSAGE_LAND_METHODS)[number];
/** What keeps "Open pull request" from working here: no repository, no GitHub remote, no token. */
export const PULL_REQUEST_MISSING = ['repository', 'remote', 'token'] as const;
export type PullRequestMissing = (typeof PULL_REQUEST_MISSING)[number];

/** `queued` waits its turn, `landing` is being landed now, `paused` waits for its agent to rebase (or a person). */
export const LANDING_QUEUE_STATES = ['queued', 'landing', 'paused'] as const;
export type LandingQueueState = (typeof LANDING_QUEUE_STATES)[number];

/**
 * Why a Requirement needs its person now (issue 47): what `GET /api/attention` lists. Each is a
 * fact of the state (an item clears when the fact stops being true), derived in one place
 * (`server/src/attention/attention-rules.ts`).
 */
export const ATTENTION_REASONS = [
  'waiting_reply',
  'confirm_done',
  'review_ready',
  'run_failed',
  'budget_reached',
  'conflict',
  'land_refused',
  'queue_blocked',
  'ci_failed',
  'dependency_cancelled',
  'runner_offline',
  'network_blocked',
] as const;
export type AttentionReason = (typeof ATTENTION_REASONS)[number];

/**
 * Where Needs-you items go outside the browser (issue 47 §3): a signed JSON webhook, a Slack
 * incoming webhook, an ntfy topic (phones), or the desktop of the machine the manager runs on.
 */
export const NOTIFICATION_KINDS = ['webhook', 'slack', 'ntfy', 'desktop'] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** A notification's delivery: waiting to be sent (or retried), sent, given up after 24 h. */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Apps a Requirement's working copy can be opened in (issue 48 §5). */
export const EDITOR_APPS = ['vscode', 'cursor', 'zed', 'idea', 'file_manager'] as const;
export type EditorApp = (typeof EDITOR_APPS)[number];
