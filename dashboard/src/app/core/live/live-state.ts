// The dashboard's whole client-side model and how each SSE event changes it. Plain TypeScript
// (no Angular) so the merge rules are unit-tested directly; the Angular stores (core/stores/) share
// one instance and each wraps its part in signals.
import type { ManagerEvent, Message, PullRequest, Requirement, ReviewRequest, Run, Timer, Trace } from '../models';
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
  /** A run of this requirement just finished (for notifications). */
  finishedRun?: Run;
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

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** A resource in a payload is used only if it looks like one and belongs to the event's Requirement. */
function owned<T extends { id: string }>(value: unknown, event: ManagerEvent, key: 'id' | 'requirementId' = 'requirementId'): T | null {
  const item = record(value);
  if (!item || typeof item['id'] !== 'string') {
    return null;
  }
  if (event.requirementId && typeof item[key] === 'string' && item[key] !== event.requirementId) {
    return null;
  }
  return item as unknown as T;
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
    const p = event.payload ?? {};
    const requirement = owned<Requirement>(p['requirement'], event, 'id');
    if (requirement && this.requirements.upsert(requirement, 'event')) {
      changes.requirements = true;
    }
    for (const timer of Array.isArray(p['timers']) ? p['timers'] : []) {
      const t = owned<Timer>(timer, event);
      if (t && this.timers.upsert(t, 'event')) {
        changes.timers = true;
      }
    }
    switch (event.type) {
      case 'requirements.purged':
        for (const id of Array.isArray(p['requirementIds']) ? p['requirementIds'] : []) {
          if (typeof id === 'string') {
            changes.requirements = this.requirements.remove(id, event.createdAt) || changes.requirements;
            this.conversations.delete(id);
            this.traces.delete(id);
            for (const timer of this.timers.items.values()) {
              if (timer.requirementId === id) {
                changes.timers = this.timers.remove(timer.id, event.createdAt) || changes.timers;
              }
            }
          }
        }
        break;
      case 'message.created': {
        const message = owned<Message>(p['message'], event);
        const log = message ? this.conversations.get(message.requirementId) : undefined;
        if (message && log && log.add([message]) > 0) {
          (changes.conversations ??= new Set()).add(message.requirementId);
        }
        break;
      }
      case 'run.trace.appended': {
        const trace = owned<Trace>(p['trace'], event);
        const log = trace && event.requirementId ? this.traces.get(event.requirementId) : undefined;
        if (trace && log && event.requirementId && log.add([trace]) > 0) {
          (changes.traces ??= new Set()).add(event.requirementId);
        }
        break;
      }
      case 'pull_request.created':
      case 'pull_request.updated': {
        const pr = owned<PullRequest>(p['pullRequest'], event);
        changes.pullRequests = !!pr && this.pullRequests.upsert(pr, 'event');
        break;
      }
      case 'manager.reconciled':
        changes.repair = (Array.isArray(p['requirementIds']) ? p['requirementIds'] : []).filter((id): id is string => typeof id === 'string');
        break;
      case 'manager.configuration.updated':
        changes.configuration = true;
        break;
      default:
        break;
    }
    const timer = owned<Timer>(p['timer'], event);
    if (timer && this.timers.upsert(timer, 'event')) {
      changes.timers = true;
    }
    const run = owned<Run>(p['run'], event);
    if (run && this.runs.upsert(run, 'event')) {
      changes.runs = true;
      if (run.finishedAt && event.type.startsWith('run.')) {
        changes.finishedRun = run;
      }
    }
    // A review's own events carry it; a PR head change carries the reviews it made stale.
    const reviews = [p['reviewRequest'], ...(Array.isArray(p['reviewRequests']) ? p['reviewRequests'] : [])];
    for (const value of reviews) {
      const review = owned<ReviewRequest>(value, event);
      if (review && this.reviewRequests.upsert(review, 'event')) {
        changes.reviewRequests = true;
      }
    }
    return changes;
  }
}
