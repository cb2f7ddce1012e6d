import type {
  AgentIsolationMechanism,
  AgentIsolationMode,
  AttachmentKind,
  AutoReviewOutcome,
  EditorApp,
  AutoReviewState,
  DependencyCondition,
  DependencyState,
  Forge,
  PullRequestStatus,
  RunRole,
  RunStatus,
  TraceKind,
  TraceStatus,
  AuthenticationMode,
  ChangedFileStatus,
  EventActorKind,
  PersonSource,
  IntakeStartMode,
  IntakeWriteBackMode,
  IsolationMode,
  NetworkMode,
  PreviewState,
  WorktreeLayout,
  LogLevel,
  MessageAuthor,
  SystemMessageArgs,
  SystemMessageCode,
  ModelSource,
  Provider,
  ReasoningEffort,
  RequirementCreator,
  RequirementStatus,
  SessionState,
  CheckpointKind,
  ReviewAuthorKind,
  ReviewCommentSide,
  ReviewCommentState,
  ReviewRequestStatus,
  ReviewRequester,
  ReviewVerdict,
  TimerSchedule,
  TimerStatus,
  DatabaseTlsMode,
  LandMethod,
  LandingQueueState,
  AttentionReason,
  DeliveryStatus,
  NotificationKind,
} from './enums';

// Resource shapes as the API returns them (JSON). Timestamps are ISO 8601 strings; a value that
// does not exist yet is null, never omitted.

export interface AgentSession {
  id: string;
  requirementId: string;
  provider: Provider;
  nativeSessionId: string | null;
  state: SessionState;
  lastError: string | null;
  lastConsumedMessageSequence: number;
  lastMessageSequence: number;
  pendingMessageCount: number;
  /** Set when a stop paused the session; no trigger, timer or queued input wakes it until a start. */
  pausedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Requirement {
  id: string;
  title: string;
  description: string;
  status: RequirementStatus;
  provider: Provider;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  createdBy: RequirementCreator;
  parentRequirementId: string | null;
  sourceSessionId: string | null;
  /** The Requirement this one was forked from, or null. */
  forkedFromRequirementId: string | null;
  /** The forge's issue it was imported from, as it was then (issue 49); null: made here. */
  source: RequirementSource | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  session: AgentSession;
  /** Where the agent works: `worktree` (its own git worktree and branch) or `in_place` (the person's checkout). */
  isolation: IsolationMode;
  /** The ref the Requirement's branch starts from (null in place or outside git). */
  baseRef: string | null;
  /** The worktree and its git state once a run prepared it; null before the first run. */
  worktree: RequirementWorktree | null;
  /** Requirements this one waits for (absent where a snapshot did not load them). */
  dependsOn?: RequirementDependency[];
  /** Start on its own once every dependency is met (absent where dependsOn is). */
  autoStart?: boolean;
  /** The cross-model review loop its open PRs get after each push, or null for none. */
  autoReview: AutoReviewSettings | null;
  /** What its RD runs may spend (either limit, or both), or null for no limit. */
  budget: RequirementBudget | null;
  /** What its RD runs have spent so far: tokens as reported (input + output), cost where the provider reports it. */
  usage: RequirementUsage;
  /**
   * What its tree has spent: its own usage plus that of every Requirement its agents proposed
   * below it, at any depth (the proposing agent's children, their children…). Its budget caps this.
   */
  treeUsage: RequirementUsage;
  /**
   * When a budget paused the session (null when not paused by a budget): its own, reached by its
   * tree, or an ancestor's, reached by that ancestor's tree. No trigger, timer or reply wakes it
   * until a person raises that budget or starts it.
   */
  budgetReachedAt: string | null;
  /** Where its work stands against its base and the other live Requirements (the conflict radar), and whether it landed. */
  landing: RequirementLanding;
  /** Why it needs its person now, oldest first (empty when it does not): the same items as `GET /api/attention`. */
  attention: AttentionItem[];
  /** Team mode: the runner it runs on (set by its first run), or null (not on a board, or never run). */
  runner: RequirementRunner | null;
}

/** A board's runner as a Requirement shows it: whose manager, on which machine, and whether it is up. */
export interface RequirementRunner {
  id: string;
  host: string;
  /** The runner's person's name. */
  person: string;
  /** Its heartbeat is younger than one lease period; false: "runner offline" (its runs are not failed). */
  online: boolean;
}

/** A runner of the board as its leader last saw it (`board.runners_changed`). */
export interface BoardRunnerStatus extends RequirementRunner {
  /** It runs the board's once-per-board jobs now. */
  leader: boolean;
}

/** A Requirement's review loop: who reviews, and at most how many rounds per PR. */
export interface AutoReviewSettings {
  provider: Provider;
  maxRounds: number;
}

/** A PR's review loop as it stands (all `off`/0/null until the loop first reviews it). */
export interface PullRequestAutoReview {
  state: AutoReviewState;
  /** Rounds counted so far (a failed round is not counted). */
  round: number;
  maxRounds: number | null;
  provider: Provider | null;
  /** The head the latest round reviewed. */
  headSha: string | null;
  /** How the latest round ended, null while the first one runs. */
  lastOutcome: AutoReviewOutcome | null;
}

/** A Requirement's spending limit; a null limit is no limit of that kind. */
export interface RequirementBudget {
  maxTokens: number | null;
  maxCostUsd: number | null;
}

/** A Requirement's spending over its RD runs. */
export interface RequirementUsage {
  inputTokens: number;
  outputTokens: number;
  /** US dollars, summed over the runs whose provider reported a cost (null when none did). */
  costUsd: number | null;
}

/** One Requirement another waits for. */
export interface RequirementDependency {
  requirementId: string;
  until: DependencyCondition;
  state: DependencyState;
  /** How it was met or ended (`merged as <sha>`, `confirmed done`, `cancelled`), else null. */
  reason: string | null;
  resolvedAt: string | null;
}

/** Where a Requirement's work is, refreshed after every run and on demand. */
export interface RequirementWorktree {
  mode: IsolationMode;
  /** The agent's working directory (the worktree, or its subdirectory in a monorepo); null once removed. */
  path: string | null;
  branch: string | null;
  baseRef: string | null;
  /** The base ref's commit when the worktree was created. */
  baseSha: string | null;
  headSha: string | null;
  /** Commits on the branch that the base ref does not have, and the other way round. */
  ahead: number;
  behind: number;
  /** Uncommitted or untracked work in the worktree. */
  dirty: boolean;
  /** How the working copy is made (null until it is). */
  layout: WorktreeLayout | null;
  /**
   * The agent's work as last imported into the person's repository: the branch's head with the
   * uncommitted and untracked files on top, as one commit (headSha itself when clean). What
   * Changes shows and what a land with `commitPending` lands.
   */
  workSha: string | null;
  /** Why the last import of the agent's work was refused (a FIFO in its objects, a corrupt object…), or null. */
  importError: string | null;
  /** When it was removed (idle, purge, cancel); a next run recreates it from its branch. */
  removedAt: string | null;
  refreshedAt: string | null;
  /** The ports reserved for it: `first` is AGENT_MANAGER_PORT, then `count` in a row (null before its first run reserved them). */
  ports: { first: number; count: number } | null;
}

/** One file of a Requirement's changes against the merge base with its base ref. */
export interface ChangedFile {
  path: string;
  /** The path before a rename; null otherwise. */
  oldPath: string | null;
  status: ChangedFileStatus;
  additions: number;
  deletions: number;
  binary: boolean;
}

/** GET /requirements/:id/changes: committed, uncommitted and untracked work. */
export interface RequirementChanges {
  baseRef: string;
  mergeBaseSha: string;
  /** The branch's head, as imported into the person's repository. */
  headSha: string;
  /**
   * What the files are listed from: the branch's head with the uncommitted and untracked work on
   * top, as one commit (headSha when there is none). Send it as a land's `expectedHead`.
   */
  workSha: string;
  files: ChangedFile[];
  /** True when the list was cut (too many files, or a bound on time or size). */
  truncated: boolean;
}

export interface MessageAttachment {
  id: string;
  requirementId: string;
  messageId: string | null;
  fileName: string;
  kind: AttachmentKind;
  mediaType: string;
  byteSize: number;
  createdAt: string;
}

export interface RequirementMessage {
  id: string;
  requirementId: string;
  sessionId: string;
  runId: string | null;
  sourceRequirementId: string | null;
  author: MessageAuthor;
  /** On a person's message: the person's stable id and name (null on others' and on older messages). */
  authorId: string | null;
  authorName: string | null;
  body: string;
  attachments: MessageAttachment[];
  sequence: number;
  deliverToRd: boolean;
  createdAt: string;
  /** Set on trigger messages (GitHub, timers): where the message came from. */
  source: string | null;
  triggerId: string | null;
  metadata: Record<string, unknown> | null;
  /** Set on what Agent Manager wrote itself: what `body` says, for a reader in another language. */
  code: SystemMessageCode | null;
  args: SystemMessageArgs | null;
}

export interface EventActor {
  kind: EventActorKind;
  /**
   * Run ID for an agent, trigger ID for a trigger, the person's stable id for a person (`person_…`,
   * the same on every manager they run); null for the system, and on events written before people were named.
   */
  id: string | null;
  /** A person's name (absent on other actors and on older events). */
  name?: string | null;
  /** A person's email, when known. */
  email?: string | null;
}

/** Who "you" are to this manager: the person every request with the owner's credentials acts as. */
export interface Person {
  /** Stable across managers: derived from the email (or, without one, the name). */
  id: string;
  name: string;
  email: string | null;
  /** Where the name came from: the configuration (personName), git's global/system `user.name`, or the OS account. */
  source: PersonSource;
}

/** A connection an agent run's proxy refused (issue 45), counted per run, host and port. */
export interface NetworkBlocked {
  id: string;
  requirementId: string;
  runId: string;
  host: string;
  port: number;
  /** CONNECT (a tunnel: HTTPS and the like) or the HTTP method of a plain request. */
  method: string;
  reason: string;
  count: number;
  firstAt: string;
  lastAt: string;
}

/** Whether agent runs have a network of their own, and what it reaches. */
export interface NetworkStatus {
  mode: NetworkMode;
  /** Whether runs get a network namespace whose only way out is the filtering proxy. */
  isolated: boolean;
  /** Why not, when the mode asks for it and the machine cannot (runs are then refused); else null. */
  unavailableReason: string | null;
  /** Allowed without being listed: the provider APIs, GitHub and the workspace's git hosts, its package registries. */
  defaults: string[];
  allow: string[];
  deny: string[];
}

/** One Requirement's own network additions (the person's choice). */
export interface RequirementNetwork {
  requirementId: string;
  allow: string[];
  /** What its runs were refused, most recent first. */
  blocked: NetworkBlocked[];
}

/** Whether this manager's agents run in the sandbox that hides the workspaces' data. */
export interface AgentIsolation {
  enabled: boolean;
  /** What isolates them; null when they are not isolated. */
  mechanism: AgentIsolationMechanism | null;
  /** Why they are not isolated (null when they are). */
  reason: string | null;
}

export interface ConfigurationValues {
  /** Variables of the manager's environment agents see besides what a shell and their CLI need (a name, or a prefix ending in `*`). */
  agentEnvironmentPass: string[];
  agentIsolation: AgentIsolationMode;
  /** Processes (threads included) one agent run may have at once (its setup included); a run that tries more fails. */
  agentProcessLimit: number;
  /** MB of one run's private /dev/shm. */
  agentShmSizeMb: number;
  /** MB of one run's temporary space (its own /tmp, /var/tmp and $TMPDIR); a run that fills it fails. */
  agentTmpSizeMb: number;
  /** Paths (absolute or `~/…`) agents may write besides their own worktree and repository, their CLI's state and toolchain caches. */
  agentWritablePaths: string[];
  /** The token limit a new Requirement gets when its creator names no budget (null: none). */
  defaultBudgetMaxTokens: number | null;
  /** The cost limit (US dollars) a new Requirement gets when its creator names no budget (null: none). */
  defaultBudgetMaxCostUsd: number | null;
  authentication: AuthenticationMode;
  host: string;
  port: number;
  allowedOrigin: string | null;
  databasePath: string | null;
  /**
   * Team mode (PostgreSQL only): the board this manager joins as one of its runners, `origin` for
   * the board named after the repository's origin URL, or null (this workspace's own schema).
   */
  board: string | null;
  /** postgres://… to keep the store on PostgreSQL (a schema per workspace); null keeps SQLite. Write-only: read back without its password. */
  databaseUrl: string | null;
  /** PostgreSQL: connections the read pool opens at most (the writer has its own). */
  databasePoolSize: number;
  /** PostgreSQL: a statement running longer than this is cancelled (0: no limit). */
  databaseStatementTimeoutSeconds: number;
  /** PostgreSQL: TLS as the URL says (sslmode), required without verification, or required and verified. */
  databaseTls: DatabaseTlsMode;
  pullRequestReconcileIntervalSeconds: number;
  cancelledRequirementRetentionDays: number;
  claudeExecutable: string;
  codexExecutable: string;
  rdInactivityTimeoutSeconds: number;
  doneRequirementRetentionDays: number;
  /** GitHub's REST root: https://api.github.com, or https://<host>/api/v3 for GitHub Enterprise. */
  githubApiUrl: string;
  /** Shared secret of the optional GitHub webhook; write-only (the API reads it back as null). */
  githubWebhookSecret: string | null;
  /** GitLab's REST root (issue 49 §5): https://gitlab.com/api/v4, or https://<host>/api/v4 self-hosted. */
  gitlabApiUrl: string;
  /** The X-Gitlab-Token of the optional GitLab webhook; write-only (the API reads it back as null). */
  gitlabWebhookSecret: string | null;
  /** What Agent Manager writes to an imported issue: work started, PR opened, landed (closes it); and a cancellation; or nothing. */
  intakeWriteBack: IntakeWriteBackMode;
  /** An issue of the workspace's repositories that gains one of these labels becomes a Requirement (none: no automatic intake). */
  intakeLabels: string[];
  /** Whether a Requirement taken in by label waits in TODO or starts at once. */
  intakeStart: IntakeStartMode;
  /** The agent a Requirement taken in by label gets. */
  intakeProvider: Provider;
  logLevel: LogLevel;
  logFilePath: string | null;
  logMaxSize: string;
  logMaxFiles: string;
  /** `worktree` (default; `in_place` wherever the workspace is not a git repository with a commit) or `in_place`. */
  isolation: IsolationMode;
  /** Where worktrees go (null: `<home>/worktrees`); never inside a data directory. */
  worktreeRoot: string | null;
  /** Gitignored paths (relative to the workspace root) symlinked into each worktree instead of copied, e.g. node_modules. */
  worktreeLinks: string[];
  /** Run once in a new worktree (`sh -c`), before the agent; null: `.agent-manager/setup` when the worktree has one. */
  worktreeSetupCommand: string | null;
  /** Working copies kept prepared (made at the base's tip, setup done) for the next Requirements to start; 0: none. */
  worktreePool: number;
  /** Run before a worktree is removed; null: `.agent-manager/teardown` when the worktree has one. */
  worktreeTeardownCommand: string | null;
  /** How much of the network agent runs reach: `allow_list` (default), `offline` or `open`. */
  networkMode: NetworkMode;
  /** Hosts agent runs may reach besides the defaults (`host`, `*.domain`, either with `:port`, or an IP). */
  networkAllow: string[];
  /** Hosts agent runs may never reach (wins over every allow, the defaults' too). */
  networkDeny: string[];
  /**
   * Secrets agents never see: named values read from the manager's environment or a 0600 file,
   * given to the person's own worktree setup command as variables and, for one host, added by the
   * run's proxy as a header. Only the names and where they come from are configured here.
   */
  secrets: SecretDefinition[];
  /** A done Requirement's worktree is removed after this many days without a run. */
  worktreeIdleDays: number;
  /** A Requirement's preview (`sh -c` in its working copy); null: `.agent-manager/run` as the person's base branch has it. */
  runCommand: string | null;
  /** What a preview's URL adds after its port (`/app`); null: nothing. */
  previewPath: string | null;
  /** A preview is ready when a line of its output matches this (a regular expression); null: when its first port answers. */
  readyPattern: string | null;
  /** Previews running at once; a start past it stops the oldest one whose agent is not running. */
  maxPreviews: number;
  /** A monorepo folder (relative to the root) that is the agent's working directory inside its worktree. */
  worktreeSubdirectory: string | null;
  /** Codex models the model catalog offers besides Codex's own listing (e.g. a provider's private models). */
  extraCodexModels: string[];
  /** Claude Code models the model catalog offers besides its aliases and the Anthropic listing. */
  extraClaudeModels: string[];
  /** Hours between automatic model catalog refreshes; 0 refreshes only on demand. */
  modelCatalogRefreshHours: number;
  /** The name this manager's person acts under (null: git's `user.name`, else the OS account). */
  personName: string | null;
  /** That person's email (null: git's `user.email`, or none). */
  personEmail: string | null;
  /** Where Needs-you items are sent outside the browser (issue 47 §3). */
  notificationChannels: NotificationChannel[];
  /** Signs what `webhook` channels receive (HMAC-SHA256); write-only (the API reads it back as null). */
  notificationWebhookSecret: string | null;
}

/** One place Needs-you items are sent to. */
export interface NotificationChannel {
  /** Its name, unique in the list (letters, digits, `-`, `_`). */
  id: string;
  kind: NotificationKind;
  /** Where to POST (http or https); null for `desktop`. */
  url: string | null;
  /** Only these reasons (null: every reason). */
  reasons: AttentionReason[] | null;
  /** Only this person's items (`person_…`; null: everyone's). */
  person: string | null;
  /** Sends only what is still open after this many seconds (0: at once). */
  delaySeconds: number;
}

/** One message to one channel: the items it carries, and how sending it went. */
export interface NotificationDelivery {
  /** The same on every retry (`X-Agent-Manager-Delivery`). */
  id: string;
  channelId: string;
  kind: NotificationKind;
  status: DeliveryStatus;
  items: NotificationDeliveryItem[];
  attempts: number;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
}

/** An item as a delivery carried it. */
export interface NotificationDeliveryItem {
  id: string;
  reason: AttentionReason;
  since: string;
  summary: string;
  requirement: { id: string; title: string };
  link: string;
}

/** One configured secret (issue 45): its name, where its value comes from, and the header it may become. */
export interface SecretDefinition {
  /** The variable it is given as, and, without `file`, the manager's variable its value is read from. */
  name: string;
  /** An absolute path to a file only its owner may read (mode 0600 or stricter) holding the value. */
  file?: string | null;
  /** The one host (`host` or `host:port`) whose requests the run's proxy adds `header` to. */
  host?: string | null;
  /** The header's name, e.g. Authorization. */
  header?: string | null;
  /** The header's value, `{value}` standing for the secret (default: the secret itself), e.g. `Bearer {value}`. */
  format?: string | null;
  /** Also given to previews as a variable (they run the agent's working copy: only a value the agent's code may use). */
  preview?: boolean | null;
}

/** One model a provider accepts, with the reasoning efforts the manager can pass for it. */
export interface CatalogModel {
  provider: Provider;
  /** The value for a Requirement's `model` (what `--model` gets). */
  id: string;
  label: string;
  efforts: ReasoningEffort[];
  source: ModelSource;
}

/** How fresh one provider's part of the catalog is. */
export interface ModelCatalogProvider {
  provider: Provider;
  /** The last successful listing; null while there has been none (the built-in list is served). */
  refreshedAt: string | null;
  /** The last attempt, successful or not. */
  attemptedAt: string | null;
  /** True when the last attempt failed: the entries are the last good listing, or the built-in list. */
  stale: boolean;
  /** Why the last attempt failed; null when it succeeded. */
  error: string | null;
}

/** The whole model catalog: what `GET /api/models` answers and `model_catalog.updated` carries. */
export interface ModelCatalog {
  items: CatalogModel[];
  /** The oldest provider's last successful listing; null while one has never been listed. */
  refreshedAt: string | null;
  /** True when any provider's part is stale. */
  stale: boolean;
  providers: ModelCatalogProvider[];
}

/** The configuration as the API and its event show it (secrets replaced by whether they are set). */
export interface ManagerConfiguration {
  path: string;
  values: ConfigurationValues;
  effective: ConfigurationValues;
  overriddenFields: (keyof ConfigurationValues)[];
  githubWebhookSecretConfigured: boolean;
  gitlabWebhookSecretConfigured: boolean;
  notificationWebhookSecretConfigured: boolean;
  liveFields: (keyof ConfigurationValues)[];
  restartRequired: boolean;
  restartRequiredFields: (keyof ConfigurationValues)[];
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface AgentRun {
  id: string;
  requirementId: string;
  /** Null for reviewer runs. */
  sessionId: string | null;
  role: RunRole;
  provider: Provider;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  status: RunStatus;
  /** The agent's last message, shortened: what the run did. */
  taskSummary: string | null;
  nativeSessionId: string | null;
  exitCode: number | null;
  error: string | null;
  inputFromSequence: number | null;
  inputToSequence: number | null;
  startedAt: string;
  finishedAt: string | null;
  inputTokens: number | null;
  cachedInputTokens: number | null;
  outputTokens: number | null;
  reasoningOutputTokens: number | null;
  /** US dollars, when the provider reports it (Claude Code); otherwise null. */
  costUsd: number | null;
}

export interface AgentTraceEvent {
  id: string;
  runId: string;
  /** Monotonic within the run. */
  sequence: number;
  kind: TraceKind;
  status: TraceStatus | null;
  title: string;
  /** At most 64 KiB. */
  detail: string | null;
  toolName: string | null;
  toolCallId: string | null;
  nativeType: string | null;
  createdAt: string;
}

export interface PullRequest {
  id: string;
  requirementId: string;
  /** Where it lives; a GitLab merge request is a pull request here (issue 49 §5). */
  forge: Forge;
  /** `owner/name` (GitLab: the project's path) as registered; identity is the forge, the lower-cased repository and the number. */
  repository: string;
  number: number;
  url: string;
  title: string;
  baseBranch: string;
  headBranch: string;
  headSha: string;
  status: PullRequestStatus;
  /** Its Requirement's review loop on this PR. */
  autoReview: PullRequestAutoReview;
  createdAt: string;
  updatedAt: string;
}

export interface AgentTimer {
  id: string;
  requirementId: string;
  description: string;
  schedule: TimerSchedule;
  intervalSeconds: number;
  status: TimerStatus;
  /** Set while active. */
  nextFireAt: string | null;
  lastFiredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * The agent's whole working state at one moment (issue 46 §5): its branch's head with the staged,
 * unstaged and untracked files on top, as one commit kept under a private ref of the person's
 * repository. What a rewind restores.
 */
export interface Checkpoint {
  id: string;
  requirementId: string;
  /** The run it was taken for (null: a rewind's). */
  runId: string | null;
  kind: CheckpointKind;
  at: string;
  /** The working state as a commit (`head` itself when nothing was uncommitted). */
  commit: string;
  /** The branch's head then. */
  head: string;
  /** Files that differ from the checkpoint before (from the worktree's base for the first). */
  filesChanged: number;
}

/** One changed file, and whether the person viewed it as it is now (issue 46 §4). */
export interface ViewedFile {
  path: string;
  viewed: boolean;
  /** When they marked it viewed (also when it changed since, and so is no longer viewed). */
  viewedAt: string | null;
}

/** The Requirement's changed files and which the person viewed: "4 of 12 files viewed". */
export interface ViewedFiles {
  workSha: string;
  items: ViewedFile[];
  viewedCount: number;
  fileCount: number;
}

/** Who wrote a review comment or a reply: a person, or an agent run (`id` its run). */
export interface ReviewAuthor {
  kind: ReviewAuthorKind;
  id: string | null;
  name: string | null;
}

/** Where a review comment was written: the commit its lines were read from, and those lines. */
export interface ReviewCommentAnchor {
  /** The agent's imported work (side `new`) or the merge base (side `old`) the lines were read from. */
  commit: string;
  /** The lines quoted, joined by newlines. */
  excerpt: string;
}

/** A reply in a review comment's thread (the agent's answer, issue 46 §3). */
export interface ReviewCommentReply {
  id: string;
  author: ReviewAuthor;
  body: string;
  createdAt: string;
}

/** A comment on lines of a Requirement's changes, and its thread (issue 46). */
export interface ReviewComment {
  id: string;
  requirementId: string;
  path: string;
  /** First line, on `side`, as the latest import numbers it (as written, once outdated). */
  line: number;
  /** Last line (equal to `line` for one line). */
  endLine: number;
  side: ReviewCommentSide;
  body: string;
  state: ReviewCommentState;
  /** An import changed its lines (or removed its file): it stays where it was written, with the lines it quoted. */
  outdated: boolean;
  anchor: ReviewCommentAnchor;
  author: ReviewAuthor;
  /** The review message that sent it, once sent. */
  messageId: string | null;
  sentAt: string | null;
  replies: ReviewCommentReply[];
  createdAt: string;
  updatedAt: string;
}

export interface ReviewRequest {
  id: string;
  pullRequestId: string;
  /** The PR's Requirement, which receives the reviewer's summary. */
  requirementId: string;
  runId: string;
  provider: Provider;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  /** The person's optional focus. */
  prompt: string | null;
  targetHeadSha: string;
  status: ReviewRequestStatus;
  requestedBy: ReviewRequester;
  /** The reviewer's verdict line, once it finished (null without one). */
  verdict: ReviewVerdict | null;
  error: string | null;
  /** True once the PR's head moved away from targetHeadSha: the review is of older code. */
  stale: boolean;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** Another live Requirement whose work conflicts with this one's, and the files where. */
export interface RequirementConflict {
  requirementId: string;
  title: string;
  paths: string[];
}

/**
 * A Requirement's landing state (issue 28): the radar's last answer for its work (committed, plus
 * uncommitted changes in its worktree) against its base, and its land once it happened.
 */
export interface RequirementLanding {
  /** Its work merges onto the base's current commit without a conflict; null when not checked (nothing to land, or in place). */
  mergesCleanly: boolean | null;
  /** Files that conflict with the base (empty when clean). */
  conflictPaths: string[];
  /** Other live Requirements it conflicts with, file by file, as if both landed on the base now. */
  conflictsWith: RequirementConflict[];
  /** Commits on the base that its branch does not have (null when not checked). */
  behindBy: number | null;
  /** The base and work commits the answer is for, and when it was found. */
  baseSha: string | null;
  headSha: string | null;
  checkedAt: string | null;
  /** When and how it landed locally, and the base's commit that holds it (null until then). */
  landedAt: string | null;
  landedMethod: LandMethod | null;
  landedCommit: string | null;
  /**
   * The agent's work as its land left it (its branch follows a squash or rebase to the landed
   * commit; after a merge it stays at the head merged). The same work now: nothing new to land.
   */
  landedWork: string | null;
}

/** Two live Requirements whose work conflicts, and the files where (a < b). */
export interface ConflictPair {
  a: string;
  b: string;
  paths: string[];
}

/** The conflict radar across every live Requirement with work (GET /api/conflicts). */
export interface ConflictRadar {
  pairs: ConflictPair[];
  requirements: Array<
    { requirementId: string; title: string } & Pick<
      RequirementLanding,
      'mergesCleanly' | 'conflictPaths' | 'conflictsWith' | 'behindBy' | 'baseSha' | 'headSha' | 'checkedAt'
    >
  >;
  /** When the last full or incremental pass finished (null before the first). */
  checkedAt: string | null;
}

/** A Requirement waiting in the merge queue. */
export interface LandingQueueItem {
  requirementId: string;
  title: string;
  method: LandMethod;
  /** 1 is landed next. */
  position: number;
  state: LandingQueueState;
  /** Why it is paused (a conflict with the base, a refusal), or null. */
  reason: string | null;
  /** The files that conflicted when it paused. */
  conflictPaths: string[];
  /** The work the person was shown when queueing it: only that lands (null: the work as it is at its turn). */
  expectedHead: string | null;
  addedAt: string;
}

export interface LandingQueue {
  items: LandingQueueItem[];
}

/** One reason a Requirement needs its person (issue 47): open while its cause holds. */
export interface AttentionItem {
  /** Stable while the item is open: a notification's delivery id derives from it. */
  id: string;
  requirementId: string;
  reason: AttentionReason;
  /** When the cause began (the run's end, the budget's pause, the block…), as far as the state says. */
  since: string;
  /** One line for the person: what happened, in words. */
  summary: string;
  /** Whose it is: the person whose manager runs the Requirement (team mode), else this manager's person. */
  person: AttentionPerson;
}

/** A person as an attention item names them. */
export interface AttentionPerson {
  id: string;
  name: string;
}

/** GET /api/attention: what needs a person now, oldest first. */
export interface AttentionList {
  items: AttentionItem[];
}

/** A browser paired with the manager (a phone): its own credential, never the owner token (issue 47 §4). */
export interface Device {
  id: string;
  name: string;
  /** The browser that paired (its User-Agent, shortened). */
  userAgent: string | null;
  pairedAt: string;
  /** Its last request, to the minute. */
  lastSeenAt: string | null;
  /** True for the device that asks. */
  current: boolean;
  /** The link that paired it. */
  pairingId: string;
}

/** A one-time link that pairs one browser; valid for ten minutes. */
export interface Pairing {
  id: string;
  /** Opened on the phone (or scanned from `qrCode`): `<origin>/pair/<secret>`. */
  url: string;
  /** The link as a QR code: an SVG image as a data: URL. */
  qrCode: string;
  name: string;
  expiresAt: string;
  /**
   * `loopback_only`: the manager answers on loopback only, so a phone reaches the link through a
   * tunnel (SSH) or not at all; null: it names the address the manager serves beyond loopback.
   */
  reachability: 'loopback_only' | null;
}

/** An app found on this machine that opens a working copy (issue 48 §5). */
export interface Editor {
  app: EditorApp;
  label: string;
  /** What runs: the command found on PATH (or `open -a <App>` on macOS). */
  command: string;
}

/** A Requirement's running app (issue 48 §2): its run script in its working copy, in its agent's sandbox. */
export interface Preview {
  requirementId: string;
  state: PreviewState;
  /** `http://127.0.0.1:<first port><previewPath>` while it runs; null otherwise. */
  url: string | null;
  /** The Requirement's reserved ports (AGENT_MANAGER_PORT is the first); null when it has no working copy. */
  ports: { first: number; count: number } | null;
  /** Its first process (the sandbox's), while it runs. */
  pid: number | null;
  /** What runs: the configured command, or `.agent-manager/run`. */
  command: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** Its exit code when it exited by itself. */
  exitCode: number | null;
  /** Why it is not running or not ready, in one line (a port held by another program, a stop for another preview). */
  reason: string | null;
  /** The last lines of its output (at most 20; the rest at `…/preview/output`). */
  lastLines: string[];
}

/** A preview's kept output: its last lines (at most 5,000), oldest first. */
export interface PreviewOutput {
  requirementId: string;
  lines: string[];
  /** Lines that came before these and are no longer kept. */
  dropped: number;
}

/** A terminal open on a Requirement's working copy (issue 48 §4): a shell in its agent's sandbox. */
export interface Terminal {
  id: string;
  requirementId: string;
  createdAt: string;
  rows: number;
  cols: number;
}

/** A forge's issue a Requirement was imported from, as it was at the import (issue 49). */
export interface RequirementSource {
  forge: Forge;
  /** `owner/repo`; GitLab: the project's full path (`group/subgroup/project`). */
  repository: string;
  number: number;
  url: string;
  title: string;
  labels: string[];
  /** Its author's login; null: a deleted account. */
  author: string | null;
  state: 'open' | 'closed';
  importedAt: string;
}
