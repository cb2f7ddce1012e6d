import type {
  AgentRun,
  AttentionItem,
  AgentTimer,
  AgentTraceEvent,
  Checkpoint,
  BoardRunnerStatus,
  ConflictRadar,
  LandingQueue,
  EventActor,
  ManagerConfiguration,
  ModelCatalog,
  NetworkBlocked,
  Preview,
  PullRequest,
  Requirement,
  RequirementMessage,
  ReviewComment,
  ReviewRequest,
} from './resources';
import type { InterruptMode } from './enums';

/** What a run's end event carries: the run and its Requirement as they are now. */
interface RunPayload {
  requirement: Requirement;
  run: AgentRun;
  /** A reviewer run's end also carries its review. */
  reviewRequest?: ReviewRequest;
  /** The manager's own stop cut the run short: its input waits for the next start (nothing reacts to it as to an end). */
  managerStopped?: true;
}

/** What a Requirement's end (done, cancelled) carries: it, and the timers that ended with it. */
interface ClosedPayload {
  requirement: Requirement;
  timers?: AgentTimer[];
}

/** A PR's events: it, and, when its head moved, the reviews that move made stale. */
interface PullRequestPayload {
  pullRequest: PullRequest;
  reviewRequests?: ReviewRequest[];
  previousStatus?: PullRequest['status'];
}

/**
 * Every ManagerEvent type and the payload it carries: the contract of the SSE stream. The
 * server appends through it (a wrong payload is a compile error) and the dashboard reads
 * through it (no cast on a payload).
 */
export interface ManagerEventPayloads {
  /** A Requirement began to need its person for a reason (issue 47); `requirement` carries it in `attention`. */
  'attention.opened': { item: AttentionItem; requirement: Requirement };
  /** Its cause cleared (a reply sent, a run started, a budget raised…); `requirement` no longer carries it. */
  'attention.cleared': { item: AttentionItem; requirement: Requirement };
  /**
   * Team mode: a runner came, went offline or came back, or the leadership moved. Written by the
   * leader only, when what it sees changes: every page learns of "runner offline" without a reload.
   */
  'board.runners_changed': { runners: BoardRunnerStatus[] };
  /** A checkpoint of a Requirement's working state was taken (a run's start or end, or before a rewind). */
  'checkpoint.created': { checkpoint: Checkpoint };
  'manager.configuration.updated': { configuration: ManagerConfiguration };
  'manager.reconciled': { failedRunIds: string[]; requirementIds: string[] };
  'landing.conflicts.updated': { radar: ConflictRadar };
  'landing.queue.updated': { queue: LandingQueue };
  'message.created': { message: RequirementMessage; requirement: Requirement };
  'model_catalog.updated': { catalog: ModelCatalog };
  /** An agent run's proxy refused a connection: the first time for its host and port, then with the count at most every few seconds. */
  'network.blocked': { blocked: NetworkBlocked };
  /** A person changed what one Requirement's runs may reach besides the workspace's list. */
  'network.allow_updated': { requirementId: string; allow: string[] };
  /** A Requirement's preview started, became ready, exited or was stopped (issue 48 §2). */
  'preview.updated': { preview: Preview };
  /** New lines of a preview's output, in order (a batch at most every half second). */
  'preview.output': { requirementId: string; lines: string[] };
  'pull_request.created': PullRequestPayload;
  'pull_request.updated': PullRequestPayload;
  'requirement.cancelled': ClosedPayload;
  'requirement.completed': ClosedPayload;
  'requirement.created': { requirement: Requirement };
  'requirement.deleted': ClosedPayload;
  /**
   * Team mode: a person moved the Requirement to their runner. `orphanedRunId` is the run its old
   * runner left `running` when it went away (now failed); that runner ends it if it is still alive.
   */
  'requirement.moved': {
    requirement: Requirement;
    fromRunnerId: string;
    toRunnerId: string;
    orphanedRunId: string | null;
  };
  'requirement.updated': { requirement: Requirement };
  'requirements.purged': { requirementIds: string[] };
  /** Review comments written, edited, sent, resolved, reopened, answered or moved by an import (issue 46). */
  'review_comments.updated': { reviewComments: ReviewComment[] };
  /** A draft review comment was deleted. */
  'review_comment.deleted': { reviewCommentId: string };
  'review_request.started': { requirement: Requirement; reviewRequest: ReviewRequest; run: AgentRun };
  'run.cancelled': RunPayload;
  'run.failed': RunPayload;
  /** Team mode: a person on another runner asked to stop or steer this run; the runner that runs it carries it out. */
  'run.interrupt_requested': { mode: InterruptMode; runId: string; runnerId: string };
  'run.started': { requirement: Requirement; run: AgentRun };
  'run.succeeded': RunPayload;
  'run.timed_out': RunPayload;
  'run.trace.appended': { trace: AgentTraceEvent };
  'timer.cancelled': { timer: AgentTimer };
  'timer.created': { timer: AgentTimer };
  'timer.fired': { messageId: string | null; scheduledFor: string; skippedOccurrences: number; timer: AgentTimer };
}

export type ManagerEventType = keyof ManagerEventPayloads;

/** The event types in a fixed order (the OpenAPI enum, the dashboard's listeners). */
export const EVENT_TYPES = [
  'attention.cleared',
  'attention.opened',
  'board.runners_changed',
  'checkpoint.created',
  'landing.conflicts.updated',
  'landing.queue.updated',
  'manager.configuration.updated',
  'manager.reconciled',
  'message.created',
  'model_catalog.updated',
  'network.allow_updated',
  'network.blocked',
  'preview.output',
  'preview.updated',
  'pull_request.created',
  'pull_request.updated',
  'requirement.cancelled',
  'requirement.completed',
  'requirement.created',
  'requirement.deleted',
  'requirement.moved',
  'requirement.updated',
  'requirements.purged',
  'review_comment.deleted',
  'review_comments.updated',
  'review_request.started',
  'run.cancelled',
  'run.failed',
  'run.interrupt_requested',
  'run.started',
  'run.succeeded',
  'run.timed_out',
  'run.trace.appended',
  'timer.cancelled',
  'timer.created',
  'timer.fired',
] as const satisfies readonly ManagerEventType[];

// A type added to the map but not to the list (or the other way round) does not compile.
type Unlisted = Exclude<ManagerEventType, (typeof EVENT_TYPES)[number]>;
export const EVENT_TYPES_COMPLETE: [Unlisted] extends [never] ? true : Unlisted = true;

/** The run end events, one per final run status. */
export type RunEndEventType = 'run.cancelled' | 'run.failed' | 'run.succeeded' | 'run.timed_out';

/** One ManagerEvent of type T. */
export interface ManagerEventOf<T extends ManagerEventType> {
  id: number;
  type: T;
  requirementId: string | null;
  sessionId: string | null;
  runId: string | null;
  actor: EventActor;
  payload: ManagerEventPayloads[T];
  createdAt: string;
}

/** Any ManagerEvent: a union discriminated by `type`, so a switch on it narrows the payload. */
export type ManagerEvent = { [T in ManagerEventType]: ManagerEventOf<T> }[ManagerEventType];
