import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';

import type { EventActor, InterruptMode, ManagerEvent, RequirementBudget, RequirementUsage } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import type { ProcessEnd } from '../agents/process-runner';
import {
  addUsage,
  blockerOf,
  budgetNotice,
  budgetNoticeCode,
  budgetOf,
  treeUsageOf,
  usageOf,
} from '../requirements/budget-rules';
import { BudgetStop, TreeBudgets } from './tree-budgets';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { DomainEvents, OnDomainEvent } from '../core/domain-events';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict } from '../core/errors/domain-error';
import { SecretsService } from '../core/secrets/secrets.service';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import '../events/board.events';
import { ReplyDto, hasReplyContent } from '../messages/dto/reply.dto';
import { MessagesService } from '../messages/messages.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementEntity } from '../requirements/requirement.entity';
import { RequirementLifecycle, type RunEnd } from '../requirements/requirement-lifecycle';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import {
  ActiveRun,
  FinalRunStatus,
  errorOf,
  newActiveRun,
  newRdRun,
  outcomeOf,
  runEndEventType,
  runEndFields,
  sessionAfterRun,
} from './active-run';
import { ActiveRunRegistry } from './active-run-registry';
import { CheckpointsService } from '../worktrees/checkpoints.service';
import { AgentRunEntity } from './agent-run.entity';
import { InterruptResponseDto, StartResponseDto, toRunResponse } from './dto/run-response.dto';
import { managerStoppedMessage } from './manager-stop-message';
import { RequirementActors } from './requirement-actors.service';
// The events this lifecycle emits (their declarations must be in every program that compiles it).
import './run.events';
import { RunLauncher } from './run-launcher.service';
import { RunPlacement } from './run-placement';
import { ownRunUsage } from './run-usage';
import { RunsRepository } from './runs.repository';
import { TraceWriter } from './trace-writer';

/** A run that went on after its Requirement moved to another runner (team mode). */
const MOVED_AWAY = 'its Requirement was moved to another runner while this run went on; the run was ended here';

/**
 * What a start without a message of its own delivers: a first run (the Requirement itself), a
 * retry of a failed run (its unconsumed input), or pending messages. A Requirement waiting with
 * nothing of these has nothing to run on.
 */
export function hasInputToStart({ requirement, session }: RequirementRows): boolean {
  return requirement.status === 'todo' || session.state === 'failed' || session.pendingMessageCount > 0;
}

/**
 * The RD run lifecycle (docs/architecture.md#runs-and-agents): the only place that starts agent processes. Opens a
 * run on its captured input (invariant 4), launches it, records its end and continues the
 * session while input remains (invariant 6); owns the runs this manager watches, the start and
 * interrupt rules and the graceful stop. Every decision runs in the Requirement's actor.
 */
@Injectable()
export class RunLifecycle implements BeforeApplicationShutdown, OnApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger(RunLifecycle.name);
  /** The RD runs this manager watches, by Requirement. */
  private readonly active: ActiveRunRegistry<ActiveRun>;
  /** The budgets the active runs count against: each one's own and its ancestors' (issue 25 §4). */
  private readonly budgets = new TreeBudgets();

  constructor(
    private readonly actors: RequirementActors,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventLog,
    private readonly launcher: RunLauncher,
    private readonly messages: MessagesService,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    private readonly secrets: SecretsService,
    private readonly checkpoints: CheckpointsService,
    private readonly placement: RunPlacement,
  ) {
    this.active = new ActiveRunRegistry<ActiveRun>(
      (active) => this.launcher.kill(active),
      (active) => active,
    );
  }

  /** True once a graceful stop began: no run starts any more. */
  get stopping(): boolean {
    return this.active.stopping;
  }

  get activeRunCount(): number {
    return this.active.size;
  }

  /**
   * POST /requirements/:id/start: starts (or retries) the RD session's work. An explicit start
   * is what ends a pause: the run takes every pending message, the interrupted and the queued.
   */
  start(requirementId: string, dto: ReplyDto, actor: EventActor): Promise<StartResponseDto> {
    return this.actors.act(requirementId, async () => {
      const { message, requirement, run } = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        this.placement.refuseIfElsewhere(requirementId, rows.requirement.runnerId);
        if (rows.requirement.status === 'done' || rows.requirement.status === 'cancelled') {
          throw conflict(
            'requirement_closed',
            `Requirement ${requirementId} is ${rows.requirement.status}; reply to a done Requirement to reopen it`,
          );
        }
        if (rows.session.state === 'running') {
          throw conflict('run_active', `Requirement ${requirementId} already has an active run`);
        }
        // Unmet dependencies first: they say why, whatever the input.
        await this.domainEvents.emit('requirement.starting', tx, rows, actor);
        if (!hasReplyContent(dto) && !hasInputToStart(rows)) {
          // A run on nothing new answers the last message again (tokens spent for a duplicate).
          throw conflict(
            'nothing_to_deliver',
            `Requirement ${requirementId} has no pending input; send a message to continue it, or confirm it`,
          );
        }
        const appended = hasReplyContent(dto) ? await this.messages.appendHuman(tx, rows, dto, actor) : null;
        const opened = await this.openRun(tx, rows, actor);
        return { message: appended, requirement: opened.requirement, run: opened.run };
      });
      this.launch(run);
      this.logger.log({ ...audit(actor), msg: 'run started', requirementId, runId: run.id });
      return { accepted: true, action: 'start', message, requirement, requirementId, run: toRunResponse(run) };
    });
  }

  /**
   * A person changed a Requirement's budget (call in its actor): every run going on in its tree
   * (its own and its descendants') counts against the new one, and the runs stop now if what they
   * reported already reaches it.
   */
  rebudget(requirementId: string, budget: RequirementBudget | null): void {
    this.stopForBudget(this.budgets.rebudget(requirementId, budget));
  }

  /**
   * What the runs going on in a Requirement's tree have spent beyond its committed tree usage
   * (its own run's and its descendants' reports so far): the room a proposal gets counts it.
   */
  runningSpend(requirementId: string): RequirementUsage {
    return this.budgets.running(requirementId);
  }

  /**
   * Pauses a Requirement that a budget keeps from running (inside a write unit, in its actor):
   * `budgetReachedAt` and the session's `pausedAt`, and the system message saying whose budget and
   * what was spent. `blocker` is the Requirement itself or the ancestor whose tree spent its budget.
   */
  async pauseForBudget(
    tx: UnitOfWork,
    rows: RequirementRows,
    blocker: RequirementEntity,
  ): Promise<RequirementResponseDto> {
    const now = this.clock.nowIso();
    this.requirementLifecycle.pauseOnBudget(tx, rows, now);
    const body = budgetNotice(rows.requirement, blocker, false);
    const { requirement } = await this.messages.append(
      tx,
      rows,
      { ...budgetNoticeCode(rows.requirement, blocker, false), author: 'system', body, deliverToRd: false },
      SYSTEM_ACTOR,
    );
    return requirement;
  }

  /**
   * POST /requirements/:id/interrupt. `stop` pauses on purpose: the session waits for a person
   * even with newer input queued (see closeRun). `steer` only when newer input waits (the run
   * then ends and the next one takes it at once). Answers once the signal is sent; the run
   * becomes `cancelled` after its process tree is gone.
   */
  interrupt(requirementId: string, mode: InterruptMode, actor: EventActor): Promise<InterruptResponseDto> {
    return this.actors.act(requirementId, async () => {
      // A read, not a write unit: every delivery to this Requirement commits inside its actor,
      // so the committed pending count is current here.
      const requirement = await this.requirements.get(requirementId);
      if (this.placement.runsElsewhere(requirement.runner?.id ?? null)) {
        return this.placement.carryInterrupt(requirement, mode, actor);
      }
      const active = this.active.get(requirementId);
      if (!active || active.interruptMode) {
        throw conflict('no_active_run', `Requirement ${requirementId} has no run to interrupt`);
      }
      if (mode === 'steer' && requirement.session.pendingMessageCount <= active.capturedCount) {
        throw conflict(
          'nothing_to_steer_with',
          'the active run already holds the latest input; use mode "stop" to pause it',
        );
      }
      active.interruptMode = mode;
      this.launcher.kill(active);
      this.logger.log({ ...audit(actor), mode, msg: 'run interrupted', requirementId, runId: active.run.id });
      return { accepted: true, action: 'interrupt', requirementId, runId: active.run.id };
    });
  }

  /**
   * POST /requirements/:id/cancel: a started (or todo) Requirement is given up. In its actor it
   * becomes `cancelled` with its timers ended (one `requirement.cancelled` event), and its run,
   * if one is active, is ended like a stop; the answer comes once that run is recorded
   * `cancelled` (bounded), then the cancel hooks run.
   */
  async cancel(requirementId: string, actor: EventActor): Promise<RequirementResponseDto> {
    const cancelled = await this.actors.act(requirementId, async () => {
      if (this.placement.ownRunnerId !== null) {
        this.placement.refuseIfElsewhere(
          requirementId,
          (await this.requirements.get(requirementId)).runner?.id ?? null,
        );
      }
      const active = this.active.get(requirementId);
      const snapshot = await this.database.write((tx) =>
        this.requirements.cancelStarted(tx, requirementId, active !== undefined, actor),
      );
      if (active) {
        active.interruptMode = 'cancel';
        this.launcher.kill(active);
      }
      this.logger.log({ ...audit(actor), msg: 'requirement cancelled', requirementId, runId: active?.run.id ?? null });
      return snapshot;
    });
    await this.active.gone(requirementId);
    // The place for what a cancel leaves behind outside the database (the worktrees feature saves
    // the Requirement's worktree as a patch and removes it): after the agent's processes are gone.
    await this.domainEvents.settle('requirement.cancelSettled', requirementId);
    return (await this.requirements.find(requirementId)) ?? cancelled;
  }

  /** The first hook of a graceful stop: from here on no run starts. */
  onModuleDestroy(): void {
    this.active.beginStop();
  }

  /**
   * On a graceful stop, end every agent (none may run unobserved) and record the runs as
   * cancelled. A restart is nobody's pause: these sessions are not paused, so the next reply or
   * trigger after the start continues them (a person's stop already in flight stays a pause).
   */
  beforeApplicationShutdown(): Promise<void> {
    // Finishing runs record their outcome through the actors: the stop waits for them (bounded).
    return this.active.stopAll();
  }

  /** Last resort at the very end of a stop: no agent process outlives the manager. */
  onApplicationShutdown(): Promise<void> {
    return this.active.interruptAll();
  }

  /**
   * Opens a run inside a write unit (the caller is in the Requirement's actor): captures the
   * input boundary (every deliverable message not yet consumed), marks the Requirement doing
   * and the session running. The partial unique index on agent_run backs "one active run per
   * session" should this check ever be wrong. Call `launch` with the run once committed.
   */
  async openRun(
    tx: UnitOfWork,
    rows: RequirementRows,
    actor: EventActor,
  ): Promise<{ run: AgentRunEntity; requirement: RequirementResponseDto }> {
    const { requirement, session } = rows;
    this.placement.refuseIfElsewhere(requirement.id, requirement.runnerId);
    const now = this.clock.nowIso();
    const run = newRdRun(rows, now);
    this.runs.insert(tx, run);
    // Whatever opens a run was allowed to: a pause (a stop's or the budget's) ends here. What the
    // run watches is read first: its own budget and every ancestor's, each with its tree's usage
    // (a person's start past one of them is not stopped by it at once).
    const ancestors = await this.requirements.ancestorsForWrite(tx, rows.requirement);
    const chain = [requirement, ...ancestors.map((a) => a.requirement)].map((r) => ({
      budget: budgetOf(r),
      id: r.id,
      treeUsage: treeUsageOf(r),
    }));
    const before = usageOf(requirement);
    this.requirementLifecycle.markRunning(tx, rows, now, this.placement.ownRunnerId);
    const snapshot = toRequirementResponse(requirement, session);
    await this.events.append(tx, {
      actor,
      payload: { requirement: snapshot, run: toRunResponse(run) },
      requirementId: requirement.id,
      runId: run.id,
      sessionId: session.id,
      type: 'run.started',
    });
    const traces = new TraceWriter(
      run,
      { id: run.id, kind: 'agent' },
      this.clock,
      this.database,
      this.events,
      this.runs,
      this.secrets,
    );
    const active = newActiveRun(run, traces, { capturedCount: session.pendingMessageCount });
    active.onUsage = () => this.stopForBudget(active.usage ? this.budgets.report(requirement.id, active.usage) : []);
    tx.afterCommit(() => {
      this.active.set(requirement.id, active);
      this.budgets.open(requirement.id, run.provider, before, chain);
    });
    return { requirement: snapshot, run };
  }

  /**
   * Team mode's move, inside its unit (the caller holds the Requirement's actor and has just made
   * this runner its runner): the run its old runner left `running` fails (nothing consumed: its
   * input stays pending), and the session goes on here at once when input waits and nothing holds
   * it (a stop's or a budget's pause, a closed Requirement). Returns the orphan's id and the run to
   * `launch` once committed.
   */
  async takeOverMoved(
    tx: UnitOfWork,
    rows: RequirementRows,
    actor: EventActor,
    orphanError: string,
  ): Promise<{ orphanedRunId: string | null; run: AgentRunEntity | null }> {
    const { requirement, session } = rows;
    const now = this.clock.nowIso();
    let orphanedRunId: string | null = null;
    if (session.state === 'running') {
      const orphan = (await this.runs.withStatus('running')).find(
        (r) => r.requirementId === requirement.id && r.role === 'rd',
      );
      this.requirementLifecycle.recordRunLost(tx, rows, orphanError, now);
      if (orphan) {
        const failed = this.runs.change(tx, orphan, {
          error: orphanError,
          finishedAt: now,
          status: 'failed',
          updatedAt: now,
        });
        orphanedRunId = orphan.id;
        await this.events.append(tx, {
          actor,
          payload: { requirement: toRequirementResponse(requirement, session), run: toRunResponse(failed) },
          requirementId: requirement.id,
          runId: orphan.id,
          sessionId: session.id,
          type: 'run.failed',
        });
      }
    }
    const open =
      requirement.status !== 'done' &&
      requirement.status !== 'cancelled' &&
      session.pausedAt === null &&
      requirement.budgetReachedAt === null;
    const run =
      open && session.pendingMessageCount > 0 && !this.stopping ? (await this.openRun(tx, rows, actor)).run : null;
    return { orphanedRunId, run };
  }

  /** Team mode: a stop or steer another runner wrote for a run of this one's. */
  @OnDomainEvent('board.eventPublished')
  async onBoardEvent(event: ManagerEvent): Promise<void> {
    if (
      event.type === 'requirement.moved' &&
      event.payload.fromRunnerId === this.placement.ownRunnerId &&
      event.requirementId !== null
    ) {
      // Moved away while a run of ours went on (this runner was cut off from the board and came
      // back): that run ends; its end records nothing on the session, which is the other runner's.
      const active = this.active.get(event.requirementId);
      if (active && !active.interruptMode) {
        active.interruptMode = 'cancel';
        this.launcher.kill(active);
        this.logger.warn({
          msg: 'run ended: its Requirement was moved to another runner',
          requirementId: event.requirementId,
          runId: active.run.id,
        });
      }
      return;
    }
    if (
      event.type !== 'run.interrupt_requested' ||
      event.payload.runnerId !== this.placement.ownRunnerId ||
      event.requirementId === null
    ) {
      return;
    }
    if (this.active.get(event.requirementId)?.run.id !== event.payload.runId) {
      return; // that run is over already (or never ran here)
    }
    await this.interrupt(event.requirementId, event.payload.mode, event.actor).catch((err: unknown) =>
      this.logger.warn({
        error: (err as Error).message,
        msg: 'a carried interrupt was not applied',
        requirementId: event.requirementId,
      }),
    );
  }

  /** Starts the CLI for an opened run. Failures to start become a failed run, never a throw. */
  launch(run: AgentRunEntity): void {
    const active = this.active.get(run.requirementId);
    if (!active) {
      return;
    }
    void this.launcher
      .start(active, this.active.stopped(active), (end) => void this.finish(run.requirementId, end))
      .catch((err: unknown) => {
        this.logger.error(`could not launch run ${run.id}: ${(err as Error).message}`, (err as Error).stack);
        void this.finish(run.requirementId, {
          code: null,
          reason: 'spawn_failed',
          signal: null,
          stderr: (err as Error).message,
        });
      });
  }

  /** The process tree is gone: decide the run's outcome and what happens next. */
  private async finish(requirementId: string, end: ProcessEnd): Promise<void> {
    const active = this.active.get(requirementId);
    if (!active) {
      return;
    }
    this.launcher.handle(active, active.parser?.end({ code: end.code, signal: end.signal, stderr: end.stderr }) ?? []);
    await active.writes;
    await active.traces.flush();
    this.launcher.release(active);
    await this.actors.act(requirementId, async () => {
      const status = outcomeOf(active, end);
      try {
        const next = await this.database.write(async (tx) => {
          // Before a continuation registers its own run (hooks run in order).
          tx.afterCommit(() => this.active.delete(requirementId));
          return this.closeRun(tx, active, status, end);
        });
        this.logger.log({
          msg: `run ${status}`,
          paused: active.interruptMode === 'stop' || active.interruptMode === 'budget',
          requirementId,
          runId: active.run.id,
        });
        // What the run changed (head, ahead, dirty) reaches the card, and its end is checkpointed;
        // a continuation waits its turn (its preparation holds the Requirement after this).
        void this.checkpoints.afterRun(requirementId, active.run.id);
        // A session left at rest is the reactions' to act on (the queue, the review loop, team mode's push).
        if (next) {
          this.launch(next);
        }
      } catch (err) {
        // Left `running` in the database: the next start's reconciliation settles it.
        this.active.delete(requirementId);
        this.budgets.close(requirementId, null);
        this.logger.error(`could not record the end of run ${active.run.id}: ${(err as Error).message}`);
      }
    });
  }

  /** Records the outcome and returns the next run when the session continues at once. */
  private async closeRun(
    tx: UnitOfWork,
    active: ActiveRun,
    status: FinalRunStatus,
    end: ProcessEnd,
  ): Promise<AgentRunEntity | null> {
    const rows = await this.requirements.loadForWrite(tx, active.run.requirementId);
    const { requirement, session } = rows;
    const run = active.run;
    if (this.placement.runsElsewhere(requirement.runnerId)) {
      // Team mode: moved to another runner while this run went on here. The run ends; the
      // session, its input and its budget are that runner's now, so nothing else is recorded.
      this.runs.change(
        tx,
        run,
        runEndFields(active, {
          error: MOVED_AWAY,
          exitCode: end.code,
          now: this.clock.nowIso(),
          status: 'failed',
          usage: null,
        }),
      );
      tx.afterCommit(() => this.budgets.close(requirement.id, null));
      return null;
    }
    const error = await this.tellEnd(tx, rows, active, status, end);
    const { overBudget, own } = await this.charge(tx, rows, active, status);
    // Once committed: the usage moves from reported to committed in the watch (which may stop the
    // other runs of a tree it completed). An idle ancestor it took to its budget is paused by the
    // budgets feature's reaction to the ancestor's charge (BudgetsService.treesCharged).
    tx.afterCommit(() => this.stopForBudget(this.budgets.close(requirement.id, own)));
    // Read after the failure's and the budget's messages' own time: their message.created events carry the
    // Requirement at that time, and the run.* event after it must not carry an older version,
    // or a client merging by update time keeps the earlier (still doing/running) snapshot.
    const now = this.clock.nowIso();
    this.runs.change(tx, run, runEndFields(active, { error, exitCode: end.code, now, status, usage: own }));

    let consumed: RunEnd['consumed'] = null;
    if (status === 'succeeded') {
      // Invariant 4: success consumes exactly the captured boundary, nothing that came later.
      const toSequence = Math.max(session.lastConsumedMessageSequence, run.inputToSequence ?? 0);
      consumed = { pending: await this.messages.countDeliverableAfter(tx, requirement.id, toSequence), toSequence };
    }
    const { continues, next, paused } = sessionAfterRun({
      active,
      overBudget,
      pending: consumed?.pending ?? session.pendingMessageCount,
      requirementStatus: requirement.status,
      status,
      stopping: this.stopping,
    });
    this.requirementLifecycle.recordRunEnd(tx, rows, { consumed, next, paused }, now);
    await this.events.append(tx, {
      actor: { id: run.id, kind: 'agent' },
      payload: {
        requirement: toRequirementResponse(requirement, session),
        run: toRunResponse(run),
        ...(active.interruptMode === 'shutdown' ? { managerStopped: true as const } : {}),
      },
      requirementId: requirement.id,
      runId: run.id,
      sessionId: session.id,
      type: runEndEventType(status),
    });
    if (!continues) {
      return null;
    }
    // Invariant 6: input remains and the Requirement is active: the same session goes on.
    const opened = await this.openRun(tx, rows, SYSTEM_ACTOR);
    return opened.run;
  }

  /**
   * What the conversation is told of a run's end: why a failed or timed-out run failed (nothing was
   * consumed), and that a manager stop cut a run short (issue 26 §8). Returns the run's error.
   */
  private async tellEnd(
    tx: UnitOfWork,
    rows: RequirementRows,
    active: ActiveRun,
    status: FinalRunStatus,
    end: ProcessEnd,
  ): Promise<string | null> {
    const { requirement, session } = rows;
    const run = active.run;
    const error =
      status === 'succeeded' || status === 'cancelled'
        ? null
        : this.secrets.mask(errorOf(active, end, status, this.configuration.get('rdInactivityTimeoutSeconds')));
    if (status === 'failed' || status === 'timed_out') {
      // Before the message: its event's snapshot already says why.
      this.requirementLifecycle.recordRunError(tx, session, error);
      await this.messages.append(
        tx,
        rows,
        {
          args:
            status === 'timed_out'
              ? { error, seconds: this.configuration.get('rdInactivityTimeoutSeconds') }
              : { error },
          author: 'system',
          body: `The run ${status === 'timed_out' ? 'timed out' : 'failed'}: ${error}\nNothing was consumed: starting again delivers the same input.`,
          code: status === 'timed_out' ? 'run.timed_out' : 'run.failed',
          deliverToRd: false,
          runId: run.id,
        },
        SYSTEM_ACTOR,
      );
    }
    if (status === 'cancelled' && active.interruptMode === 'shutdown' && requirement.status !== 'cancelled') {
      // A manager stop cuts the run short: say so in the conversation (issue 26 §8), or the person
      // sees a run that ended without a word and does not know the input waits for the next start.
      await this.messages.append(tx, rows, managerStoppedMessage(run.id), SYSTEM_ACTOR);
    }
    return error;
  }

  /**
   * Charges a closed run's own usage to its Requirement, its tree and every ancestor's tree (issue
   * 25 §4: a capped parent cannot spend through its children), and pauses on a budget it reached.
   */
  private async charge(
    tx: UnitOfWork,
    rows: RequirementRows,
    active: ActiveRun,
    status: FinalRunStatus,
  ): Promise<{ overBudget: boolean; own: TokenUsage | null }> {
    const { requirement } = rows;
    const run = active.run;
    const own = await ownRunUsage(tx, this.runs, active);
    // The Requirement's usage grows with the run's own, and so does its tree's and every
    // ancestor's (issue 25 §4): a capped parent cannot spend through its children.
    const usage = addUsage(usageOf(requirement), own);
    const tree = addUsage(treeUsageOf(requirement), own);
    this.requirementLifecycle.recordUsage(tx, requirement, usage, tree);
    const ancestors = await this.chargeAncestors(tx, requirement, run.id, own);
    // Reaching its own budget or an ancestor's pauses like a stop; a run stopped on a budget its
    // tree reached with reports not yet committed (a sibling's run still going) pauses on that one.
    const chain = [requirement, ...ancestors.map((a) => a.requirement)];
    const blocker =
      blockerOf(chain) ??
      (active.interruptMode === 'budget' ? (chain.find((r) => r.id === active.budgetStoppedBy) ?? requirement) : null);
    const overBudget = requirement.status !== 'cancelled' && blocker !== null;
    if (blocker && overBudget) {
      const runStopped = active.interruptMode === 'budget' && status !== 'succeeded';
      this.requirementLifecycle.markBudgetReached(tx, requirement, this.clock.nowIso());
      await this.messages.append(
        tx,
        rows,
        {
          ...budgetNoticeCode(requirement, blocker, runStopped),
          author: 'system',
          body: budgetNotice(requirement, blocker, runStopped),
          deliverToRd: false,
          runId: run.id,
        },
        SYSTEM_ACTOR,
      );
    }
    return { overBudget, own };
  }

  /**
   * Adds a closed run's own usage to the tree usage of every ancestor of its Requirement, each
   * with its `requirement.updated` (their cards show it), in the closing unit. Returns the
   * ancestors, nearest first.
   */
  private async chargeAncestors(
    tx: UnitOfWork,
    requirement: RequirementEntity,
    runId: string,
    own: TokenUsage | null,
  ): Promise<RequirementRows[]> {
    const ancestors = await this.requirements.ancestorsForWrite(tx, requirement);
    if (!own || (own.inputTokens === 0 && own.outputTokens === 0 && !own.costUsd)) {
      return ancestors;
    }
    const now = this.clock.nowIso();
    for (const ancestor of ancestors) {
      const tree = addUsage(treeUsageOf(ancestor.requirement), own);
      this.requirementLifecycle.recordTreeUsage(tx, ancestor.requirement, tree, now);
      await this.events.append(tx, {
        actor: { id: runId, kind: 'agent' },
        payload: { requirement: toRequirementResponse(ancestor.requirement, ancestor.session) },
        requirementId: ancestor.requirement.id,
        sessionId: ancestor.session.id,
        type: 'requirement.updated',
      });
    }
    return ancestors;
  }

  /**
   * Stops the runs the budget watch named, like a person's stop (their input stays pending, they
   * pause when they close). A run that already finished is left to close: its report came with
   * its outcome, and it succeeds and pauses as it closes.
   */
  private stopForBudget(stops: BudgetStop[]): void {
    for (const { by, requirementId } of stops) {
      const active = this.active.get(requirementId);
      if (!active || active.interruptMode !== null || active.outcome.completed || active.outcome.failure !== null) {
        continue;
      }
      active.interruptMode = 'budget';
      active.budgetStoppedBy = by;
      this.logger.log({ by, msg: 'budget reached: stopping the run', requirementId, runId: active.run.id });
      this.launcher.kill(active);
    }
  }
}
