import type { InterruptMode, RequirementStatus, RunEndEventType, RunStatus } from '@libs/contracts';

import { newId } from '../core/ids';
import type { RunEnd } from '../requirements/requirement-lifecycle';
import type { RequirementRows } from '../requirements/requirements.repository';

import type { OutputParser, TokenUsage } from '../agents/agent-adapter';
import type { ProcessEnd, RunningProcess } from '../agents/process-runner';
import type { RunCaps } from '../agents/run-limits';
import type { AgentRunEntity } from './agent-run.entity';
import type { PreparedInput } from './run-input.service';
import type { TraceWriter } from './trace-writer';

/** A run whose process this manager started and still watches. */
export interface ActiveRun {
  run: AgentRunEntity;
  /** Deliverable messages the run took as input (to tell whether newer input arrived). */
  capturedCount: number;
  process: RunningProcess | null;
  /** Why the run is being ended: a person's stop or steer, a graceful stop, its Requirement's cancel, or its budget reached. */
  interruptMode: InterruptMode | 'shutdown' | 'cancel' | 'budget' | null;
  /**
   * An RD run's budget watch, told each time the CLI reports usage (reviewer runs have none):
   * RunLifecycle checks the budgets of the run's tree (its own and its ancestors') and stops runs.
   */
  onUsage?: () => void;
  /** Set with `interruptMode: 'budget'`: the Requirement whose budget its tree reached (its own, or an ancestor). */
  budgetStoppedBy?: string;
  parser: OutputParser | null;
  traces: TraceWriter;
  /** Output-driven writes (session id, assistant messages) in arrival order. */
  writes: Promise<unknown>;
  /**
   * `failure`: why it failed, as the CLI or the manager said; `imposed`: a failure the manager
   * ended it for (a limit hit), which what the CLI then says of its own end does not replace.
   */
  outcome: { completed: boolean; failure: string | null; imposed?: string | null };
  usage: TokenUsage | null;
  lastAssistantText: string | null;
  /** Set up front for reviewer runs; RD runs read their captured messages at launch. */
  input?: PreparedInput;
  /** A reviewer's working directory (its temporary worktree); RD runs get theirs at launch. */
  cwd?: string;
  /** While the worktree (and its setup command) is prepared: aborted by a stop before the CLI exists. */
  preparing?: AbortController | null;
  /** The run's limits (its pids cgroup, its sizes) and their watch, from its start to its end. */
  caps?: RunCaps;
  limitWatch?: { check: () => boolean; stop: () => void };
}

/**
 * A run about to be watched, nothing heard from its CLI yet. `capturedCount` is how many
 * deliverable messages it took (an RD run's input); a reviewer's `input` is fixed up front.
 */
export function newActiveRun(
  run: AgentRunEntity,
  traces: TraceWriter,
  fields: Pick<ActiveRun, 'capturedCount'> & Pick<Partial<ActiveRun>, 'input'>,
): ActiveRun {
  return {
    ...fields,
    interruptMode: null,
    lastAssistantText: null,
    outcome: { completed: false, failure: null },
    parser: null,
    process: null,
    run,
    traces,
    usage: null,
    writes: Promise.resolve(),
  };
}

export function outcomeOf(active: ActiveRun, end: ProcessEnd): FinalRunStatus {
  switch (end.reason) {
    case 'interrupted':
      // Ended by the manager for a failure it imposed (a limit hit): failed, with that reason.
      return active.outcome.imposed ? 'failed' : 'cancelled';
    case 'timed_out':
      return 'timed_out';
    case 'spawn_failed':
      return 'failed';
    case 'exited':
      return active.outcome.completed && !active.outcome.failure && !active.outcome.imposed && end.code === 0
        ? 'succeeded'
        : 'failed';
    default:
      return 'failed';
  }
}

/** How a run can end. */
export type FinalRunStatus = Exclude<RunStatus, 'running'>;

/** The event a run's end publishes. */
export function runEndEventType(status: FinalRunStatus): RunEndEventType {
  switch (status) {
    case 'succeeded':
      return 'run.succeeded';
    case 'failed':
      return 'run.failed';
    case 'cancelled':
      return 'run.cancelled';
    case 'timed_out':
      return 'run.timed_out';
  }
}

export function errorOf(active: ActiveRun, end: ProcessEnd, status: RunStatus, timeoutSeconds: number): string {
  if (active.outcome.imposed) {
    return active.outcome.imposed;
  }
  if (status === 'timed_out') {
    return `no output for ${timeoutSeconds} s`;
  }
  if (end.reason === 'spawn_failed') {
    // Set when the run failed before its CLI was even tried (its worktree could not be prepared).
    if (active.outcome.failure) {
      return active.outcome.failure;
    }
    return `the agent CLI could not be started: ${end.stderr.split('\n')[0] ?? 'unknown error'}`;
  }
  if (active.outcome.failure) {
    return active.outcome.failure;
  }
  const tail = end.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
  return `the agent exited with ${end.signal ? `signal ${end.signal}` : `code ${end.code}`}${tail ? `: ${tail}` : ''}`;
}

/** How much of the agent's last message a run keeps as its task summary. */
const SUMMARY_LENGTH = 500;

/**
 * What a finished run's row records (RD or reviewer): outcome, exit code, usage and summary.
 * Staged with `RunsRepository.change` on the active run's row, so the events built from it
 * afterwards carry the final state.
 */
export function runEndFields(
  active: ActiveRun,
  outcome: { status: RunStatus; error: string | null; exitCode: number | null; usage: TokenUsage | null; now: string },
): Partial<AgentRunEntity> {
  const { error, exitCode, now, status, usage } = outcome;
  return {
    cachedInputTokens: usage?.cachedInputTokens ?? null,
    costUsd: usage?.costUsd ?? null,
    error,
    exitCode,
    finishedAt: now,
    inputTokens: usage?.inputTokens ?? null,
    outputTokens: usage?.outputTokens ?? null,
    reasoningOutputTokens: usage?.reasoningOutputTokens ?? null,
    status,
    taskSummary: active.lastAssistantText ? active.lastAssistantText.slice(0, SUMMARY_LENGTH) : null,
    updatedAt: now,
  };
}

/** The row of an RD run opening now on every deliverable message its session has not consumed. */
export function newRdRun({ requirement, session }: RequirementRows, now: string): AgentRunEntity {
  const id = newId('run');
  return {
    cachedInputTokens: null,
    costUsd: null,
    error: null,
    exitCode: null,
    finishedAt: null,
    id,
    inputFromSequence: session.lastConsumedMessageSequence + 1,
    inputTokens: null,
    inputToSequence: session.lastMessageSequence,
    model: requirement.model,
    nativeSessionId: session.nativeSessionId,
    outputTokens: null,
    processGroupId: null,
    processId: null,
    // Known from the start: the setup command carries it before the CLI exists, so a crash
    // during setup leaves processes the startup sweep can still find.
    processMarker: id,
    processStartTime: null,
    provider: requirement.provider,
    reasoningEffort: requirement.reasoningEffort,
    reasoningOutputTokens: null,
    requirementId: requirement.id,
    role: 'rd',
    sessionId: session.id,
    startedAt: now,
    status: 'running',
    taskSummary: null,
    traceCount: 0,
    updatedAt: now,
  };
}

/**
 * What the session does once a run closed (invariant 6): it goes on at once while newer input
 * waits and nothing holds it, else it rests (`waiting_human`), fails, or ends with its cancelled
 * Requirement. `pending` is what is still deliverable after the run's own consumption.
 */
export function sessionAfterRun({
  active,
  overBudget,
  pending,
  requirementStatus,
  status,
  stopping,
}: {
  active: Pick<ActiveRun, 'capturedCount' | 'interruptMode'>;
  overBudget: boolean;
  pending: number;
  requirementStatus: RequirementStatus;
  status: FinalRunStatus;
  stopping: boolean;
}): { continues: boolean; next: RunEnd['next']; paused: boolean } {
  const newerInput = pending > (status === 'succeeded' ? 0 : active.capturedCount);
  // A stop is the intentional pause (api-contract "State rules"): queued input stays pending
  // until a person starts the session again, or stop would be steer. Whatever the run's own
  // outcome (it may have finished just before the signal), the person asked it to halt.
  const paused = active.interruptMode === 'stop' || overBudget;
  const continues =
    !paused &&
    !stopping &&
    newerInput &&
    requirementStatus === 'doing' &&
    (status === 'succeeded' || status === 'cancelled');
  let next: RunEnd['next'] = 'continues';
  if (requirementStatus === 'cancelled') {
    // Cancelled while this run ended (RunLifecycle.cancel): the session ends with it.
    next = 'completed';
  } else if (!continues) {
    next = status === 'succeeded' || status === 'cancelled' ? 'waiting_human' : 'failed';
  }
  return { continues, next, paused };
}
