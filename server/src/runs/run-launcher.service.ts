import { randomUUID } from 'node:crypto';

import { Injectable, Logger } from '@nestjs/common';

import type { AgentAdapter, NormalizedEvent } from '../agents/agent-adapter';
import { AgentSandbox } from '../agents/agent-sandbox';
import { SandboxGit } from '../agents/sandbox-layout';
import { RunLimits } from '../agents/run-limits';
import type { RdWorkPlace } from '../agents/prompt';
import { ClaudeCodeAdapter } from '../agents/claude-code.adapter';
import { CodexAdapter } from '../agents/codex.adapter';
import { cliNotFoundMessage, findExecutable } from '../agents/executable';
import { ProcessEnd, runProcess } from '../agents/process-runner';
import { RunCredentialsService } from '../auth/run-credentials.service';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { EventLog } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService } from '../requirements/requirements.service';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import { CheckpointsService } from '../worktrees/checkpoints.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import type { ActiveRun } from './active-run';
import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { NetworkService, type RunNetwork } from '../network/network.service';
import { RunInputService } from './run-input.service';
import { RunsRepository } from './runs.repository';

/** A reviewer run ends after this long, however chatty (docs/architecture.md#runs-and-agents). */
export const REVIEWER_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * Runs the agent CLI of a run: builds its input and invocation, starts the process with its
 * environment and run credential, and turns its output into traces, the native session id
 * and conversation messages. RunLifecycle (or ReviewsService for reviewers) decides everything else.
 */
@Injectable()
export class RunLauncher {
  private readonly logger = new Logger(RunLauncher.name);
  private readonly adapters: Record<string, AgentAdapter> = {
    'claude-code': new ClaudeCodeAdapter(),
    codex: new CodexAdapter(),
  };

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly credentials: RunCredentialsService,
    private readonly database: Database,
    private readonly environment: AgentEnvironmentService,
    private readonly events: EventLog,
    private readonly input: RunInputService,
    private readonly messages: MessagesService,
    private readonly network: NetworkService,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    private readonly limits: RunLimits,
    private readonly sandbox: AgentSandbox,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
    private readonly checkpoints: CheckpointsService,
  ) {}

  /**
   * Starts the CLI of an opened run and feeds its output into the run. `stopped` is asked once
   * the input is ready (a stop may have come meanwhile); `ended` gets the process's end once
   * its whole tree is gone.
   */
  async start(active: ActiveRun, stopped: () => boolean, ended: (end: ProcessEnd) => void): Promise<void> {
    const { run } = active;
    const adapter = this.adapters[run.provider];
    const reviewer = run.role === 'reviewer';
    // Where it works: an RD run in its Requirement's worktree (made now the first time, its setup
    // run), a reviewer where ReviewsService put it. A worktree that cannot be made fails the run
    // before anything was consumed.
    let cwd = active.cwd ?? this.input.workspace;
    let workTree = cwd;
    let gitDirs: SandboxGit | null = null;
    let placeEnv: Record<string, string> = {};
    // The run's private temporary directory (its TMPDIR; concealed from every other run), removed when it ends.
    const tmp = this.sandbox.makeTemporary(run.id);
    // Its limits (processes, temporary space), its setup command included (issue 44 §5).
    active.caps = this.limits.open(run.id);
    // Its network (issue 45), its setup command included: the proxy listens before anything runs.
    let network: RunNetwork;
    try {
      network = await this.network.openRun(
        { id: run.id, provider: run.provider, requirementId: run.requirementId, sessionId: run.sessionId },
        this.environment.baseEnvironment(run.provider),
        (blocked) =>
          active.traces.add({
            detail: blocked.reason,
            kind: 'error',
            nativeType: 'network.blocked',
            status: 'failed',
            title: `Network: ${blocked.method} ${blocked.host}:${blocked.port} blocked`,
            toolCallId: null,
            toolName: null,
          }),
      );
    } catch (err) {
      active.outcome.failure = `the run's network could not be opened: ${(err as Error).message}`;
      ended({ code: null, reason: 'spawn_failed', signal: null, stderr: (err as Error).message });
      return;
    }
    // A stop, steer, cancel or shutdown during the setup command ends it at once (kill()).
    active.preparing = new AbortController();
    // What an RD run's instructions say of its place (a reviewer's input, fixed already, never reads it).
    let place: RdWorkPlace = { branch: null, cwd, mode: 'in_place', reason: 'chosen' };
    if (!reviewer) {
      try {
        const where = await this.worktrees.prepareRun(run.requirementId, (trace) => active.traces.add(trace), {
          caps: active.caps,
          marker: run.id,
          network,
          signal: active.preparing.signal,
          tmp,
        });
        cwd = where.cwd;
        workTree = where.workTree;
        gitDirs = where.git;
        placeEnv = where.env;
        place = where.place;
        // The state its agent starts from (issue 46 §5), before the agent can change it.
        if (where.place.mode === 'worktree') {
          await this.checkpoints.atRunStart(run.requirementId, run.id, where.untouchedAt);
        }
      } catch (err) {
        if (stopped()) {
          ended({ code: null, reason: 'interrupted', signal: null, stderr: '' });
          return;
        }
        active.outcome.failure = `the run's worktree could not be prepared: ${(err as Error).message}`;
        ended({ code: null, reason: 'spawn_failed', signal: null, stderr: (err as Error).message });
        return;
      }
    } else {
      gitDirs = await this.workspace.sandboxGitFor(cwd);
    }
    active.preparing = null;
    // A reviewer's input is fixed when it is requested; an RD run reads its captured messages,
    // its instructions naming the place just prepared.
    const prepared = active.input ?? (await this.input.prepare(run, place));
    if (stopped()) {
      // Stopped before its process existed: nothing to kill, nothing consumed.
      ended({ code: null, reason: 'interrupted', signal: null, stderr: '' });
      return;
    }
    // Reviewers talk to GitHub, not to Agent Manager: no run credential, no code-factory-cli.
    const env = reviewer
      ? this.environment.reviewerEnvironment(run.provider)
      : this.environment.environment({
          provider: run.provider,
          requirementId: run.requirementId,
          sessionId: run.sessionId as string,
          token: this.credentials.issue({
            requirementId: run.requirementId,
            runId: run.id,
            sessionId: run.sessionId as string,
          }),
        });
    Object.assign(env, placeEnv, { TMPDIR: tmp }, network.env);
    const executable = this.configuration.get(run.provider === 'codex' ? 'codexExecutable' : 'claudeExecutable');
    // Looked up as the child would (its PATH, its cwd) so that a missing CLI says what to do.
    const resolved = findExecutable(executable, env.PATH ?? '', cwd);
    if (resolved === null) {
      ended({ code: null, reason: 'spawn_failed', signal: null, stderr: cliNotFoundMessage(run.provider, executable) });
      return;
    }
    const invocation = adapter.buildInvocation({
      env,
      // The resolved path: what was checked is what runs, with or without the sandbox around it.
      executable: resolved,
      images: prepared.images,
      instructions: prepared.instructions,
      model: run.model,
      nativeSessionId: run.nativeSessionId,
      newSessionId: randomUUID(),
      prompt: prepared.prompt,
      reasoningEffort: run.reasoningEffort,
      role: run.role,
      runningAsRoot: process.getuid?.() === 0,
      toolServer: reviewer ? null : this.environment.toolServer(),
      workspace: cwd,
    });
    const sandboxed = this.sandbox.wrap(invocation.command, invocation.args, {
      caps: active.caps,
      cwd,
      env: invocation.env,
      git: gitDirs,
      network: network.sandbox,
      provider: run.provider,
      readOnlyFiles: prepared.attachmentFiles,
      tmp,
      workTree,
    });
    active.parser = adapter.createParser();
    const proc = await runProcess({
      args: sandboxed.args,
      command: sandboxed.command,
      cwd,
      env: invocation.env,
      inactivityTimeoutMs: reviewer ? REVIEWER_TIMEOUT_MS : this.configuration.get('rdInactivityTimeoutSeconds') * 1000,
      marker: run.id,
      maxDurationMs: reviewer ? REVIEWER_TIMEOUT_MS : undefined,
      onLine: (line, truncatedFrom) => {
        if (truncatedFrom !== undefined) {
          active.traces.add({
            detail: line.slice(0, 2000),
            kind: 'error',
            nativeType: 'oversized-line',
            status: null,
            title: `An output line of ${truncatedFrom} bytes was cut`,
            toolCallId: null,
            toolName: null,
          });
          return;
        }
        this.handle(active, active.parser?.line(line) ?? []);
      },
      stdin: invocation.stdin,
    });
    active.process = proc;
    active.run.processMarker = run.id;
    // A limit hit fails the run with the reason, and ends it (no other run is harmed).
    active.limitWatch = this.limits.watch(active.caps, proc.pid ?? -1, (reason) => {
      active.outcome.imposed = `the run hit a limit: ${reason}`;
      active.traces.add({
        detail: reason,
        kind: 'error',
        nativeType: 'limit',
        status: 'failed',
        title: 'A limit of the run was hit',
        toolCallId: null,
        toolName: null,
      });
      this.kill(active);
    });
    // Watched from here on, whatever happens next: its end always reaches the caller.
    void proc.finished.then(ended);
    try {
      await this.database.write(async (tx) =>
        this.runs.update(
          tx,
          { processGroupId: proc.pgid, processId: proc.pid, processMarker: run.id, processStartTime: proc.startTime },
          { id: run.id },
        ),
      );
    } catch (err) {
      // Without its marker on record a crash could not find it again: end it now (the run fails).
      this.logger.error(`could not record the process of run ${run.id}: ${(err as Error).message}`);
      active.outcome.failure = `the run's process could not be recorded: ${(err as Error).message}`;
      this.kill(active);
      return;
    }
    if (active.interruptMode) {
      this.kill(active);
    }
  }

  /** The run is over: its credential stops working, its limits are read a last time and go, its temporary directory goes. */
  release(active: ActiveRun): void {
    this.credentials.revoke(active.run.id);
    active.limitWatch?.check();
    active.limitWatch?.stop();
    if (active.caps) {
      void this.limits.close(active.caps);
    }
    void this.network.closeRun(active.run.id);
    try {
      this.sandbox.removeTemporary(active.run.id);
    } catch (err) {
      this.logger.warn(`could not remove the temporary directory of run ${active.run.id}: ${(err as Error).message}`);
    }
  }

  /** Ends the run's process tree, or its setup command before there is one (the run then finishes as interrupted). */
  kill(active: ActiveRun): void {
    active.preparing?.abort();
    void active.process
      ?.interrupt()
      .catch((err: unknown) => this.logger.error(`could not end run ${active.run.id}: ${(err as Error).message}`));
  }

  /** Applies the parser's events in arrival order. */
  handle(active: ActiveRun, events: NormalizedEvent[]): void {
    this.apply(active, events);
    // The report that takes a budget of the run's tree across stops the run like a person's stop:
    // what the run did so far stays, its input is not consumed. Asked once the line's events are
    // applied, so the watch sees the CLI's outcome too (a run that already finished is not
    // stopped: it succeeds and pauses when it closes; docs/decisions.md, "Budgets").
    if (active.onUsage && events.some((event) => event.type === 'usage')) {
      active.onUsage();
    }
  }

  private apply(active: ActiveRun, events: NormalizedEvent[]): void {
    for (const event of events) {
      switch (event.type) {
        case 'trace':
          active.traces.add(event.trace);
          break;
        case 'session':
          active.writes = active.writes.then(() => this.recordNativeSession(active, event.nativeSessionId));
          break;
        case 'assistant_message':
          active.lastAssistantText = event.text;
          // A reviewer's text is its summary, posted once when it finishes; an RD agent speaks as it goes.
          if (active.run.role === 'rd') {
            active.writes = active.writes
              .then(() => active.traces.flush())
              .then(() => this.recordAssistantMessage(active, event.text));
          }
          break;
        case 'usage':
          active.usage = event.usage;
          break;
        case 'completed':
          active.outcome.completed = true;
          break;
        case 'failed':
          active.outcome.failure = event.message;
          break;
        default:
          break;
      }
    }
  }

  private recordNativeSession(active: ActiveRun, nativeSessionId: string): Promise<void> {
    active.run.nativeSessionId = nativeSessionId;
    if (active.run.role === 'reviewer') {
      return this.database
        .write(async (tx) => this.runs.update(tx, { nativeSessionId }, { id: active.run.id }))
        .catch((err: unknown) =>
          this.logger.error(`could not record the native session of run ${active.run.id}: ${(err as Error).message}`),
        );
    }
    return this.database
      .write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, active.run.requirementId);
        this.runs.update(tx, { nativeSessionId }, { id: active.run.id });
        if (rows.session.nativeSessionId !== nativeSessionId) {
          this.requirementLifecycle.recordNativeSession(tx, rows.session, nativeSessionId, this.clock.nowIso());
          await this.events.append(tx, {
            actor: { id: active.run.id, kind: 'agent' },
            payload: { requirement: toRequirementResponse(rows.requirement, rows.session) },
            requirementId: rows.requirement.id,
            runId: active.run.id,
            sessionId: rows.session.id,
            type: 'requirement.updated',
          });
        }
      })
      .catch((err: unknown) =>
        this.logger.error(`could not record the native session of run ${active.run.id}: ${(err as Error).message}`),
      );
  }

  private recordAssistantMessage(active: ActiveRun, text: string): Promise<void> {
    return this.database
      .write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, active.run.requirementId);
        await this.messages.append(
          tx,
          rows,
          { author: 'rd_agent', body: text, deliverToRd: false, runId: active.run.id },
          { id: active.run.id, kind: 'agent' },
        );
      })
      .then(() => undefined)
      .catch((err: unknown) =>
        this.logger.error(`could not record a message of run ${active.run.id}: ${(err as Error).message}`),
      );
  }
}
