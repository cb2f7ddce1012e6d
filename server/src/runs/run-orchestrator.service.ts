import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';

import type { EventActor, InterruptMode } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import type { ProcessEnd } from '../agents/process-runner';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import type { WriteTx } from '../core/database/write-tx';
import { conflict, invalid } from '../core/errors/domain-error';
import { newId } from '../core/ids';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import { MessageResponseDto } from '../messages/dto/message-response.dto';
import { ReplyDto } from '../messages/dto/reply.dto';
import { MessagesService } from '../messages/messages.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementRows, RequirementsService } from '../requirements/requirements.service';
import { AgentRunEntity } from './agent-run.entity';
import { InterruptResponseDto, StartResponseDto, toRunResponse } from './dto/run-response.dto';
import { ActiveRun, FinalRunStatus, errorOf, outcomeOf, recordRunEnd, runEndEventType } from './active-run';
import { RunLauncher } from './run-launcher.service';
import { TraceWriter } from './trace-writer';

/**
 * What a delivery wrote. `wake` asks for a run; `resumes` says the delivery may also end a
 * stop's pause (a person's reply), which nothing else does.
 */
export interface Delivered {
  message: MessageResponseDto;
  wake: boolean;
  resumes?: boolean;
}

/** What a delivered message did: `queued` when it waits for the active run (or no run was woken). */
export interface DeliveryResult {
  message: MessageResponseDto;
  requirement: RequirementResponseDto;
  queued: boolean;
}
/** How long a graceful stop waits for interrupted runs to be recorded. */
const SHUTDOWN_WAIT_MS = 10_000;

/**
 * The run orchestrator (architecture §6): the only place that starts agent processes. Every
 * decision about a Requirement — start, reply, interrupt, finish, continue — runs in that
 * Requirement's own serial actor, so they never race; different Requirements run concurrently.
 */
@Injectable()
export class RunOrchestrator implements BeforeApplicationShutdown, OnApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger(RunOrchestrator.name);
  private readonly actors = new Map<string, Promise<unknown>>();
  private readonly active = new Map<string, ActiveRun>();
  private shuttingDown = false;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly launcher: RunLauncher,
    private readonly messages: MessagesService,
    private readonly requirements: RequirementsService,
  ) {}

  /**
   * POST /requirements/:id/start: starts (or retries) the RD session's work. An explicit start
   * is what ends a pause: the run takes every pending message, the interrupted and the queued.
   */
  start(requirementId: string, dto: ReplyDto, actor: EventActor): Promise<StartResponseDto> {
    return this.act(requirementId, async () => {
      const { message, requirement, run } = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        if (rows.requirement.status === 'done' || rows.requirement.status === 'cancelled') {
          throw conflict('requirement_closed', `Requirement ${requirementId} is ${rows.requirement.status}; reply to a done Requirement to reopen it`);
        }
        if (rows.session.state === 'running') {
          throw conflict('run_active', `Requirement ${requirementId} already has an active run`);
        }
        const appended = hasContent(dto) ? await this.appendHuman(tx, rows, dto, actor) : null;
        const opened = await this.openRun(tx, rows, actor);
        return { message: appended, requirement: opened.requirement, run: opened.run };
      });
      this.launch(run);
      this.logger.log({ ...audit(actor), msg: 'run started', requirementId, runId: run.id });
      return { accepted: true, action: 'start', message, requirement, requirementId, run: toRunResponse(run) };
    });
  }

  /**
   * POST /requirements/:id/reply: the message always lands in the conversation. With a run
   * active it waits for the next run (queued); otherwise a run starts now, reopening a done
   * Requirement in its original session. A reply to a paused session resumes it: a person
   * writing after a stop is a person acting (docs/decisions.md, "Stop is a pause").
   */
  reply(requirementId: string, dto: ReplyDto, actor: EventActor): Promise<DeliveryResult> {
    if (!hasContent(dto)) {
      return Promise.reject(invalid('empty_message', 'a reply needs message text or at least one attachment'));
    }
    return this.deliver(
      requirementId,
      async (tx, rows) => {
        if (rows.requirement.status === 'cancelled') {
          throw conflict('requirement_cancelled', `Requirement ${requirementId} is cancelled`);
        }
        return { message: await this.appendHuman(tx, rows, dto, actor), resumes: true, wake: true };
      },
      actor,
    ).then((result) => result as DeliveryResult);
  }

  /**
   * The one way a message reaches a session from outside a run: a person's reply, another
   * Requirement's agent, a trigger. `write` appends the message (and whatever must commit with
   * it) in the Requirement's actor and write unit, or returns null to write nothing. When it
   * asks to wake the session, a run starts now unless one is active (then the message waits
   * for the next run) or the session is paused by a stop and the delivery does not `resume` it
   * (only a person does: triggers, timers, reviewers and other agents leave it pending); a done
   * Requirement is reopened in its original session.
   */
  deliver(requirementId: string, write: (tx: WriteTx, rows: RequirementRows) => Promise<Delivered | null>, actor: EventActor): Promise<DeliveryResult | null> {
    return this.act(requirementId, async () => {
      const result = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        const written = await write(tx, rows);
        if (!written) {
          return null;
        }
        const paused = rows.session.pausedAt !== null && written.resumes !== true;
        if (!written.wake || paused || rows.session.state === 'running' || this.shuttingDown) {
          return { message: written.message, requirement: toRequirementResponse(rows.requirement, rows.session), run: null };
        }
        const opened = await this.openRun(tx, rows, actor);
        return { message: written.message, requirement: opened.requirement, run: opened.run };
      });
      if (!result) {
        return null;
      }
      if (result.run) {
        this.launch(result.run);
      }
      this.logger.log({ ...audit(actor), msg: 'message delivered', queued: result.run === null, requirementId, sequence: result.message.sequence });
      return { message: result.message, queued: result.run === null, requirement: result.requirement };
    });
  }

  /**
   * POST /requirements/:id/interrupt. `stop` pauses on purpose: the session waits for a person
   * even with newer input queued (see closeRun). `steer` only when newer input waits (the run
   * then ends and the next one takes it at once). Answers once the signal is sent; the run
   * becomes `cancelled` after its process tree is gone.
   */
  interrupt(requirementId: string, mode: InterruptMode, actor: EventActor): Promise<InterruptResponseDto> {
    return this.act(requirementId, async () => {
      // A read, not a write unit: every delivery to this Requirement commits inside its actor,
      // so the committed pending count is current here.
      const requirement = await this.requirements.get(requirementId);
      const active = this.active.get(requirementId);
      if (!active || active.interruptMode) {
        throw conflict('no_active_run', `Requirement ${requirementId} has no run to interrupt`);
      }
      if (mode === 'steer' && requirement.session.pendingMessageCount <= active.capturedCount) {
        throw conflict('nothing_to_steer_with', 'the active run already holds the latest input; use mode "stop" to pause it');
      }
      active.interruptMode = mode;
      this.kill(active);
      this.logger.log({ ...audit(actor), mode, msg: 'run interrupted', requirementId, runId: active.run.id });
      return { accepted: true, action: 'interrupt', requirementId, runId: active.run.id };
    });
  }

  /** The first hook of a graceful stop: from here on no run starts. */
  onModuleDestroy(): void {
    this.shuttingDown = true;
  }

  /**
   * On a graceful stop, end every agent (none may run unobserved) and record the runs as
   * cancelled. A restart is nobody's pause: these sessions are not paused, so the next reply or
   * trigger after the start continues them (a person's stop already in flight stays a pause).
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    const running = [...this.active.values()];
    for (const active of running) {
      active.interruptMode ??= 'shutdown';
      this.kill(active);
    }
    // Finishing runs record their outcome through the actors: wait for them (bounded).
    const deadline = Date.now() + SHUTDOWN_WAIT_MS;
    while (this.active.size > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Last resort at the very end of a stop: no agent process outlives the manager. */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.active.values()].map((active) => active.process?.interrupt().catch(() => undefined)));
  }

  private kill(active: ActiveRun): void {
    this.launcher.kill(active);
  }

  /** True once a graceful stop began: no run starts any more. */
  get stopping(): boolean {
    return this.shuttingDown;
  }

  get activeRunCount(): number {
    return this.active.size;
  }

  /** Serializes decisions per Requirement. */
  private act<T>(requirementId: string, decision: () => Promise<T>): Promise<T> {
    const previous = this.actors.get(requirementId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(decision);
    const settled = next.catch(() => undefined);
    this.actors.set(requirementId, settled);
    void settled.then(() => {
      if (this.actors.get(requirementId) === settled) {
        this.actors.delete(requirementId);
      }
    });
    return next;
  }

  private appendHuman(tx: WriteTx, rows: RequirementRows, dto: ReplyDto, actor: EventActor) {
    return this.messages.append(tx, rows, { attachmentIds: dto.attachmentIds ?? [], author: 'human', body: dto.message ?? '', deliverToRd: true }, actor).then((r) => r.message);
  }

  /**
   * Opens a run inside a write unit: captures the input boundary (every deliverable message not
   * yet consumed), marks the Requirement doing and the session running. The partial unique
   * index on agent_run backs "one active run per session" should this check ever be wrong.
   */
  private async openRun(tx: WriteTx, rows: RequirementRows, actor: EventActor): Promise<{ run: AgentRunEntity; requirement: RequirementResponseDto }> {
    const { requirement, session } = rows;
    const now = this.clock.nowIso();
    const run: AgentRunEntity = {
      cachedInputTokens: null,
      error: null,
      exitCode: null,
      finishedAt: null,
      id: newId('run'),
      inputFromSequence: session.lastConsumedMessageSequence + 1,
      inputTokens: null,
      inputToSequence: session.lastMessageSequence,
      model: requirement.model,
      nativeSessionId: session.nativeSessionId,
      outputTokens: null,
      processGroupId: null,
      processId: null,
      processMarker: null,
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
    tx.insert('agent_run', { ...run });
    // Whatever opens a run was allowed to: a pause ends here.
    Object.assign(requirement, { completedAt: null, status: 'doing', updatedAt: now });
    Object.assign(session, { pausedAt: null, state: 'running', updatedAt: now });
    tx.update('requirement', { completedAt: null, status: 'doing', updatedAt: now }, { id: requirement.id });
    tx.update('agent_session', { pausedAt: null, state: 'running', updatedAt: now }, { id: session.id });
    const snapshot = toRequirementResponse(requirement, session);
    await this.events.append(tx, {
      actor,
      payload: { requirement: snapshot, run: toRunResponse(run) },
      requirementId: requirement.id,
      runId: run.id,
      sessionId: session.id,
      type: 'run.started',
    });
    const active: ActiveRun = {
      capturedCount: session.pendingMessageCount,
      interruptMode: null,
      lastAssistantText: null,
      outcome: { completed: false, failure: null },
      parser: null,
      process: null,
      run,
      traces: new TraceWriter(run, { id: run.id, kind: 'agent' }, this.clock, this.database, this.events),
      usage: null,
      writes: Promise.resolve(),
    };
    tx.afterCommit(() => this.active.set(requirement.id, active));
    return { requirement: snapshot, run };
  }

  /** Starts the CLI for an opened run. Failures to start become a failed run, never a throw. */
  private launch(run: AgentRunEntity): void {
    const active = this.active.get(run.requirementId);
    if (!active) {
      return;
    }
    const stopped = () => this.shuttingDown || active.interruptMode !== null;
    void this.launcher
      .start(active, stopped, (end) => void this.finish(run.requirementId, end))
      .catch((err: unknown) => {
        this.logger.error(`could not launch run ${run.id}: ${(err as Error).message}`, (err as Error).stack);
        void this.finish(run.requirementId, { code: null, reason: 'spawn_failed', signal: null, stderr: (err as Error).message });
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
    await this.act(requirementId, async () => {
      const status = outcomeOf(active, end);
      try {
        const next = await this.database.write(async (tx) => {
          // Before a continuation registers its own run (hooks run in order).
          tx.afterCommit(() => this.active.delete(requirementId));
          return this.closeRun(tx, active, status, end);
        });
        this.logger.log({ msg: `run ${status}`, paused: active.interruptMode === 'stop', requirementId, runId: active.run.id });
        if (next) {
          this.launch(next);
        }
      } catch (err) {
        // Left `running` in the database: the next start's reconciliation settles it.
        this.active.delete(requirementId);
        this.logger.error(`could not record the end of run ${active.run.id}: ${(err as Error).message}`);
      }
    });
  }

  /**
   * This run's own token usage. Codex reports a running total for its thread, which a resumed
   * session carries across runs: subtract what the session's earlier runs already recorded.
   */
  private async runUsage(tx: WriteTx, active: ActiveRun): Promise<TokenUsage | null> {
    const reported = active.usage;
    if (!reported || active.run.provider !== 'codex' || active.run.sessionId === null) {
      return reported;
    }
    const [earlier] = await (
      await tx.reads()
    ).query<Array<{ input: number; cached: number; output: number; reasoning: number }>>(
      `SELECT COALESCE(SUM(input_tokens), 0) AS input, COALESCE(SUM(cached_input_tokens), 0) AS cached,
              COALESCE(SUM(output_tokens), 0) AS output, COALESCE(SUM(reasoning_output_tokens), 0) AS reasoning
         FROM agent_run WHERE session_id = ? AND id <> ? AND provider = 'codex'`,
      [active.run.sessionId, active.run.id],
    );
    const minus = (total: number, before: number | undefined) => Math.max(0, total - Number(before ?? 0));
    return {
      cachedInputTokens: minus(reported.cachedInputTokens, earlier?.cached),
      inputTokens: minus(reported.inputTokens, earlier?.input),
      outputTokens: minus(reported.outputTokens, earlier?.output),
      reasoningOutputTokens: minus(reported.reasoningOutputTokens, earlier?.reasoning),
    };
  }

  /** Records the outcome and returns the next run when the session continues at once. */
  private async closeRun(tx: WriteTx, active: ActiveRun, status: FinalRunStatus, end: ProcessEnd): Promise<AgentRunEntity | null> {
    const rows = await this.requirements.loadForWrite(tx, active.run.requirementId);
    const { requirement, session } = rows;
    const run = active.run;
    const error = status === 'succeeded' || status === 'cancelled' ? null : errorOf(active, end, status, this.configuration.get('rdInactivityTimeoutSeconds'));
    if (status === 'failed' || status === 'timed_out') {
      session.lastError = error;
      await this.messages.append(
        tx,
        rows,
        {
          author: 'system',
          body: `The run ${status === 'timed_out' ? 'timed out' : 'failed'}: ${error}\nNothing was consumed: starting again delivers the same input.`,
          deliverToRd: false,
          runId: run.id,
        },
        SYSTEM_ACTOR,
      );
    }
    // Read after the failure message's own time: its message.created event carries the
    // Requirement at that time, and the run.* event after it must not carry an older version,
    // or a client merging by update time keeps the earlier (still doing/running) snapshot.
    const now = this.clock.nowIso();
    recordRunEnd(tx, active, { error, exitCode: end.code, now, status, usage: await this.runUsage(tx, active) });

    if (status === 'succeeded') {
      // Invariant 4: success consumes exactly the captured boundary, nothing that came later.
      const consumedTo = Math.max(session.lastConsumedMessageSequence, run.inputToSequence ?? 0);
      session.lastConsumedMessageSequence = consumedTo;
      session.pendingMessageCount = await this.messages.countDeliverableAfter(tx, requirement.id, consumedTo);
      session.lastError = null;
    }
    const newerInput = session.pendingMessageCount > (status === 'succeeded' ? 0 : active.capturedCount);
    // A stop is the intentional pause (api-contract "State rules"): queued input stays pending
    // until a person starts the session again, or stop would be steer. Whatever the run's own
    // outcome (it may have finished just before the signal), the person asked it to halt.
    const paused = active.interruptMode === 'stop';
    const continues = !paused && !this.shuttingDown && newerInput && requirement.status === 'doing' && (status === 'succeeded' || status === 'cancelled');
    if (paused) {
      session.pausedAt = now;
    }
    session.updatedAt = now;
    if (!continues) {
      session.state = status === 'succeeded' || status === 'cancelled' ? 'waiting_human' : 'failed';
      requirement.status = 'waiting_confirmation';
      requirement.updatedAt = now;
      tx.update('requirement', { status: requirement.status, updatedAt: now }, { id: requirement.id });
    }
    tx.update(
      'agent_session',
      {
        lastConsumedMessageSequence: session.lastConsumedMessageSequence,
        lastError: session.lastError,
        pausedAt: session.pausedAt,
        pendingMessageCount: session.pendingMessageCount,
        state: session.state,
        updatedAt: now,
      },
      { id: session.id },
    );
    await this.events.append(tx, {
      actor: { id: run.id, kind: 'agent' },
      payload: { requirement: toRequirementResponse(requirement, session), run: toRunResponse(run) },
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
}

function hasContent(dto: ReplyDto): boolean {
  return (dto.message ?? '').trim() !== '' || (dto.attachmentIds ?? []).length > 0;
}
