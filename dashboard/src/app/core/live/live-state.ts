// The dashboard's whole client-side model and how each SSE event changes it. Plain TypeScript
// (no Angular) so the merge rules are unit-tested directly; the Angular stores (core/stores/) share
// one instance and each wraps its part in signals.
import type {
  BoardRunnerStatus,
  LandingQueue,
  ManagerEvent,
  ManagerEventPayloads,
  ModelCatalog,
} from '@libs/contracts';

import type { Message, NetworkBlocked, PullRequest, Requirement, ReviewRequest, Run, Timer, Trace } from '../api-types';
import { SequencedLog, VersionedMap, type MergeSource } from './merge';

/** Which parts changed, so each store republishes only its signals that did. */
export interface Changes {
  requirements?: boolean;
  pullRequests?: boolean;
  timers?: boolean;
  runs?: boolean;
  reviewRequests?: boolean;
  /** Requirement IDs whose conversation or trace changed. */
  conversations?: Set<string>;
  traces?: Set<string>;
  /** Requirements whose payload was incomplete and should be re-read (`manager.reconciled`). */
  repair?: string[];
  configuration?: boolean;
  /** The whole model catalog, as `model_catalog.updated` carried it. */
  modelCatalog?: ModelCatalog;
  /** The whole merge queue, as `landing.queue.updated` carried it. */
  landingQueue?: LandingQueue;
  /** Team mode: every runner of the board, as `board.runners_changed` carried them. */
  runners?: BoardRunnerStatus[];
  /** A run of this requirement just finished (for notifications). */
  finishedRun?: Run;
  /** Connections runs' proxies refused, as `network.blocked` carried them (with their counts so far). */
  networkBlocked?: NetworkBlocked[];
  /** Needs you: items opened and cleared, with their Requirement as it was then. */
  attentionOpened?: ManagerEventPayloads['attention.opened'][];
  attentionCleared?: ManagerEventPayloads['attention.cleared'][];
}

/** Runs have no update time; a finished run is newer than a running one. */
const runVersion = (run: Run): number => (run.finishedAt ? 1 : 0);

const compareMessages = (a: Message, b: Message): number => a.sequence - b.sequence;

/** Across runs by time; within a run by its own sequence (times can tie within a millisecond). */
const compareTraces = (a: Trace, b: Trace): number => {
  if (a.runId === b.runId) {
    return a.sequence - b.sequence;
  }
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1;
};

/**
 * The event's payload is typed, but which Requirement a resource in it belongs to is data: one that
 * names another Requirement than the event is not used (a runtime check, not a cast).
 */
function belongs(event: ManagerEvent, requirementId: string): boolean {
  return !event.requirementId || requirementId === event.requirementId;
}

function owned<T extends { requirementId: string }>(item: T | null | undefined, event: ManagerEvent): T | null {
  return item && belongs(event, item.requirementId) ? item : null;
}

export class LiveState {
  readonly requirements = new VersionedMap<Requirement>((r) => r.updatedAt);
  readonly pullRequests = new VersionedMap<PullRequest>((p) => p.updatedAt);
  readonly timers = new VersionedMap<Timer>((t) => t.updatedAt);
  readonly runs = new VersionedMap<Run>(runVersion);
  readonly reviewRequests = new VersionedMap<ReviewRequest>((r) => r.updatedAt);
  /** Conversations and traces are kept only for Requirements someone opened. */
  readonly conversations = new Map<string, SequencedLog<Message>>();
  readonly traces = new Map<string, SequencedLog<Trace>>();

  conversation(requirementId: string): SequencedLog<Message> {
    let log = this.conversations.get(requirementId);
    if (!log) {
      log = new SequencedLog<Message>(compareMessages);
      this.conversations.set(requirementId, log);
    }
    return log;
  }

  trace(requirementId: string): SequencedLog<Trace> {
    let log = this.traces.get(requirementId);
    if (!log) {
      log = new SequencedLog<Trace>(compareTraces);
      this.traces.set(requirementId, log);
    }
    return log;
  }

  /** A snapshot page from a JSON query; never overrides a newer event or a tombstone. */
  loadRequirements(items: readonly Requirement[], source: MergeSource = 'snapshot'): boolean {
    return this.requirements.upsertMany(items, source);
  }

  apply(event: ManagerEvent): Changes {
    const changes: Changes = {};
    switch (event.type) {
      case 'requirement.created':
      case 'requirement.moved':
      case 'requirement.updated':
        this.applyRequirement(event, event.payload.requirement, changes);
        break;
      case 'attention.opened':
        this.applyRequirement(event, event.payload.requirement, changes);
        (changes.attentionOpened ??= []).push(event.payload);
        break;
      case 'attention.cleared':
        this.applyRequirement(event, event.payload.requirement, changes);
        (changes.attentionCleared ??= []).push(event.payload);
        break;
      case 'requirement.cancelled':
      case 'requirement.completed':
      case 'requirement.deleted':
        this.applyRequirement(event, event.payload.requirement, changes);
        for (const timer of event.payload.timers ?? []) {
          this.applyTimer(event, timer, changes);
        }
        break;
      case 'requirements.purged':
        for (const id of event.payload.requirementIds) {
          changes.requirements = this.requirements.remove(id, event.createdAt) || changes.requirements;
          this.conversations.delete(id);
          this.traces.delete(id);
          for (const timer of this.timers.items.values()) {
            if (timer.requirementId === id) {
              changes.timers = this.timers.remove(timer.id, event.createdAt) || changes.timers;
            }
          }
        }
        break;
      case 'message.created': {
        this.applyRequirement(event, event.payload.requirement, changes);
        const message = owned(event.payload.message, event);
        const log = message ? this.conversations.get(message.requirementId) : undefined;
        if (message && log && log.add([message]) > 0) {
          (changes.conversations ??= new Set()).add(message.requirementId);
        }
        break;
      }
      case 'run.trace.appended': {
        // A trace names its run, not its Requirement: it goes to the event's.
        const log = event.requirementId ? this.traces.get(event.requirementId) : undefined;
        if (log && event.requirementId && log.add([event.payload.trace]) > 0) {
          (changes.traces ??= new Set()).add(event.requirementId);
        }
        break;
      }
      case 'pull_request.created':
      case 'pull_request.updated': {
        const pr = owned(event.payload.pullRequest, event);
        changes.pullRequests = !!pr && this.pullRequests.upsert(pr, 'event');
        // A PR head change carries the reviews it made stale.
        for (const review of event.payload.reviewRequests ?? []) {
          this.applyReview(event, review, changes);
        }
        break;
      }
      case 'run.started':
        this.applyRequirement(event, event.payload.requirement, changes);
        this.applyRun(event, event.payload.run, changes);
        break;
      case 'run.cancelled':
      case 'run.failed':
      case 'run.succeeded':
      case 'run.timed_out':
        this.applyRequirement(event, event.payload.requirement, changes);
        this.applyRun(event, event.payload.run, changes);
        // A reviewer run's end also carries its review.
        this.applyReview(event, event.payload.reviewRequest, changes);
        break;
      case 'review_request.started':
        this.applyRequirement(event, event.payload.requirement, changes);
        this.applyRun(event, event.payload.run, changes);
        this.applyReview(event, event.payload.reviewRequest, changes);
        break;
      case 'timer.cancelled':
      case 'timer.created':
      case 'timer.fired':
        this.applyTimer(event, event.payload.timer, changes);
        break;
      case 'manager.reconciled':
        changes.repair = [...event.payload.requirementIds];
        break;
      case 'manager.configuration.updated':
        changes.configuration = true;
        break;
      case 'model_catalog.updated':
        changes.modelCatalog = event.payload.catalog;
        break;
      case 'landing.queue.updated':
        changes.landingQueue = event.payload.queue;
        break;
      case 'board.runners_changed':
        changes.runners = event.payload.runners;
        break;
      case 'network.blocked':
        (changes.networkBlocked ??= []).push(event.payload.blocked);
        break;
      case 'network.allow_updated':
        // The network panel reads a Requirement's list when it opens; no store keeps it.
        break;
      case 'run.interrupt_requested':
        // Team mode: the run's own end event (from the runner that runs it) changes what is shown.
        break;
      case 'preview.updated':
      case 'preview.output':
        // No store keeps them: the worktree strip of the Requirement on screen follows them itself.
        break;
      case 'review_comments.updated':
      case 'review_comment.deleted':
      case 'checkpoint.created':
        // No store keeps them: the review view (issue 46 §7) reads them again on these events itself.
        break;
      case 'landing.conflicts.updated':
        // Nothing to merge: every Requirement whose radar answer changed has its own
        // `requirement.updated` (with `landing`) ahead of this summary on the stream.
        break;
      default:
        // Exhaustive: a type added to the contracts without a case here does not compile.
        return unhandled(event);
    }
    return changes;
  }

  private applyRequirement(event: ManagerEvent, requirement: Requirement, changes: Changes): void {
    if (belongs(event, requirement.id) && this.requirements.upsert(requirement, 'event')) {
      changes.requirements = true;
    }
  }

  private applyTimer(event: ManagerEvent, timer: Timer, changes: Changes): void {
    const t = owned(timer, event);
    if (t && this.timers.upsert(t, 'event')) {
      changes.timers = true;
    }
  }

  private applyRun(event: ManagerEvent, run: Run, changes: Changes): void {
    const r = owned(run, event);
    if (r && this.runs.upsert(r, 'event')) {
      changes.runs = true;
      if (r.finishedAt && event.type.startsWith('run.')) {
        changes.finishedRun = r;
      }
    }
  }

  private applyReview(event: ManagerEvent, review: ReviewRequest | undefined, changes: Changes): void {
    const r = owned(review, event);
    if (r && this.reviewRequests.upsert(r, 'event')) {
      changes.reviewRequests = true;
    }
  }
}

function unhandled(event: never): Changes {
  void event;
  return {};
}
