import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import type { EventActor, Provider, ReasoningEffort, ReviewRequestStatus, ReviewRequester } from '@libs/contracts';

import type { ProcessEnd } from '../agents/process-runner';
import { ReviewerInput, buildReviewerInstructions, buildReviewerPrompt, parseReviewVerdict } from '../agents/prompt';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { DomainEvents, OnDomainEvent } from '../core/domain-events';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, notFound } from '../core/errors/domain-error';
import { newId } from '../core/ids';
import { SecretsService } from '../core/secrets/secrets.service';
import { EventLog, audit } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { PullRequestEntity } from '../pull-requests/pull-request.entity';
import type { HeadChangeExtras } from '../pull-requests/pull-request.events';
import { PullRequestsService } from '../pull-requests/pull-requests.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import {
  ActiveRun,
  FinalRunStatus,
  errorOf,
  newActiveRun,
  outcomeOf,
  runEndEventType,
  runEndFields,
} from '../runs/active-run';
import { ActiveRunRegistry } from '../runs/active-run-registry';
import { AgentRunEntity } from '../runs/agent-run.entity';
import { toRunResponse } from '../runs/dto/run-response.dto';
import { RunLauncher } from '../runs/run-launcher.service';
import { RunsRepository } from '../runs/runs.repository';
import { ConversationDelivery } from '../conversation/conversation-delivery.service';
import { TraceWriter } from '../runs/trace-writer';
import { ReviewWorktrees } from '../worktrees/review-worktrees.service';
import {
  CreateReviewRequestDto,
  CreateReviewResponseDto,
  ListReviewRequestsQueryDto,
  ReviewRequestPageDto,
  toReviewRequestResponse,
} from './dto/review-request.dto';
import type { ReviewEnd } from './review.events';
import { ReviewRequestEntity } from './review-request.entity';
import { ReviewsRepository } from './reviews.repository';

const LOST = 'Agent Manager stopped while the review was running';

/** What a review is asked for with, and by whom. */
export interface ReviewSpec {
  provider: Provider;
  model?: string | null;
  reasoningEffort?: ReasoningEffort | null;
  prompt?: string | null;
  requestedBy: ReviewRequester;
  /** The loop's round of how many, for the reviewer's instructions (null for a person's review). */
  loopRound: { round: number; maxRounds: number } | null;
}

interface ActiveReview {
  review: ReviewRequestEntity;
  active: ActiveRun;
  pullRequest: PullRequestEntity;
}

/**
 * AI reviews of open PRs, asked for by a person (protocol §2): a short-lived reviewer run
 * through the same adapters and process runner as RD runs (ephemeral, no session, no manager
 * access), one active per PR. Its final summary lands in the PR's Requirement as a `reviewer`
 * message delivered to the RD agent, through the conversation delivery path (ConversationDelivery).
 */
@Injectable()
export class ReviewsService implements BeforeApplicationShutdown, OnApplicationBootstrap {
  private readonly logger = new Logger(ReviewsService.name);
  /** The reviewers this manager watches, by review. */
  private readonly running: ActiveRunRegistry<ActiveReview>;

  constructor(
    private readonly clock: Clock,
    private readonly conversation: ConversationDelivery,
    private readonly database: Database,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventLog,
    private readonly launcher: RunLauncher,
    private readonly messages: MessagesService,
    private readonly pullRequests: PullRequestsService,
    private readonly repository: ReviewsRepository,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    private readonly secrets: SecretsService,
    private readonly worktrees: ReviewWorktrees,
  ) {
    this.running = new ActiveRunRegistry<ActiveReview>(
      (active) => this.launcher.kill(active),
      (entry) => entry.active,
    );
  }

  /** Reviews left running by a stopped manager cannot finish: their runs were failed at start too. */
  async onApplicationBootstrap(): Promise<void> {
    const lost = await this.database.write(async (tx) => {
      const running = await this.repository.allRunningIn(tx);
      const now = this.clock.nowIso();
      this.repository.update(
        tx,
        { error: LOST, finishedAt: now, status: 'failed', updatedAt: now },
        { status: 'running' },
      );
      return running.map((review): ReviewRequestEntity => ({
        ...review,
        error: LOST,
        finishedAt: now,
        status: 'failed',
        updatedAt: now,
      }));
    });
    // The end steps of each (a review loop's round goes back to waiting for a push), one unit
    // apiece: a Requirement purged meanwhile fails only its own.
    for (const review of lost) {
      await this.database
        .write(async (tx) => {
          const pullRequest = await this.pullRequests.findIn(tx, review.pullRequestId);
          if (pullRequest) {
            await this.runEndSteps(tx, await this.requirements.loadForWrite(tx, review.requirementId), {
              pullRequest,
              review,
              status: 'failed',
            });
          }
        })
        .catch((err: unknown) =>
          this.logger.warn(`could not settle the lost review ${review.id}: ${(err as Error).message}`),
        );
    }
  }

  async request(
    pullRequestId: string,
    dto: CreateReviewRequestDto,
    actor: EventActor,
  ): Promise<CreateReviewResponseDto> {
    const started = await this.database.write(async (tx) => {
      const pullRequest = await this.pullRequests.findIn(tx, pullRequestId);
      if (!pullRequest) {
        throw notFound('pull_request_not_found', `Pull request ${pullRequestId} not found`);
      }
      if (pullRequest.forge !== 'github') {
        // The reviewer reads and publishes with `gh` and the person's GitHub token: never on another forge's request.
        throw conflict(
          'review_unsupported_forge',
          `${pullRequest.repository}!${pullRequest.number} is a GitLab merge request; AI review works on GitHub pull requests only`,
        );
      }
      if (pullRequest.status !== 'open') {
        throw conflict(
          'pull_request_not_open',
          `${pullRequest.repository}#${pullRequest.number} is ${pullRequest.status}; only an open PR can be reviewed`,
        );
      }
      const active = await this.repository.runningForIn(tx, pullRequestId);
      if (active) {
        throw conflict(
          'review_active',
          `${pullRequest.repository}#${pullRequest.number} already has a review running (${active.id})`,
        );
      }
      const rows = await this.requirements.loadForWrite(tx, pullRequest.requirementId);
      return this.openIn(tx, rows, pullRequest, { ...dto, loopRound: null, requestedBy: 'human' }, actor);
    });
    this.logger.log({
      ...audit(actor),
      msg: 'review requested',
      pullRequestId,
      reviewRequestId: started.review.id,
      runId: started.run.id,
    });
    return {
      accepted: true,
      pullRequestId,
      reviewRequest: toReviewRequestResponse(started.review),
      run: toRunResponse(started.run),
    };
  }

  /**
   * Opens a review of an open PR with no review running (the caller checked both) inside the
   * caller's unit: its reviewer run and `review_request.started`. The reviewer launches once the
   * unit committed.
   */
  async openIn(
    tx: UnitOfWork,
    rows: RequirementRows,
    pullRequest: PullRequestEntity,
    spec: ReviewSpec,
    actor: EventActor,
  ): Promise<{ review: ReviewRequestEntity; run: AgentRunEntity }> {
    if (this.running.stopping) {
      throw conflict('shutting_down', 'Agent Manager is stopping');
    }
    const now = this.clock.nowIso();
    const run: AgentRunEntity = {
      cachedInputTokens: null,
      costUsd: null,
      error: null,
      exitCode: null,
      finishedAt: null,
      id: newId('run'),
      inputFromSequence: null,
      inputTokens: null,
      inputToSequence: null,
      model: spec.model ?? null,
      nativeSessionId: null,
      outputTokens: null,
      processGroupId: null,
      processId: null,
      processMarker: null,
      processStartTime: null,
      provider: spec.provider,
      reasoningEffort: spec.reasoningEffort ?? null,
      reasoningOutputTokens: null,
      requirementId: pullRequest.requirementId,
      role: 'reviewer',
      sessionId: null,
      startedAt: now,
      status: 'running',
      taskSummary: null,
      traceCount: 0,
      updatedAt: now,
    };
    const review: ReviewRequestEntity = {
      createdAt: now,
      error: null,
      finishedAt: null,
      id: newId('review'),
      model: run.model,
      prompt: spec.prompt?.trim() ? spec.prompt : null,
      provider: spec.provider,
      pullRequestId: pullRequest.id,
      reasoningEffort: run.reasoningEffort,
      requestedBy: spec.requestedBy,
      requirementId: pullRequest.requirementId,
      runId: run.id,
      stale: false,
      status: 'running',
      targetHeadSha: pullRequest.headSha,
      updatedAt: now,
      verdict: null,
    };
    this.runs.insert(tx, run);
    this.repository.insert(tx, review);
    await this.events.append(tx, {
      actor,
      payload: {
        requirement: toRequirementResponse(rows.requirement, rows.session),
        reviewRequest: toReviewRequestResponse(review),
        run: toRunResponse(run),
      },
      requirementId: pullRequest.requirementId,
      runId: run.id,
      type: 'review_request.started',
    });
    tx.afterCommit(() => this.launch(review, run, pullRequest, spec.loopRound));
    return { review, run };
  }

  /** The review running for a PR, as the unit sees it. */
  runningForIn(tx: UnitOfWork, pullRequestId: string): Promise<ReviewRequestEntity | null> {
    return this.repository.runningForIn(tx, pullRequestId);
  }

  get stopping(): boolean {
    return this.running.stopping;
  }

  async list(query: ListReviewRequestsQueryDto): Promise<ReviewRequestPageDto> {
    const { nextCursor, rows } = await this.repository.page(query);
    return { items: rows.map(toReviewRequestResponse), nextCursor };
  }

  /** Graceful stop: end every reviewer and record the reviews as cancelled (bounded wait). */
  beforeApplicationShutdown(): Promise<void> {
    return this.running.stopAll();
  }

  get activeReviewCount(): number {
    return this.running.size;
  }

  private launch(
    review: ReviewRequestEntity,
    run: AgentRunEntity,
    pullRequest: PullRequestEntity,
    loopRound: ReviewSpec['loopRound'],
  ): void {
    const input: ReviewerInput = {
      focus: review.prompt,
      headSha: review.targetHeadSha,
      loopRound,
      number: pullRequest.number,
      pullRequestUrl: pullRequest.url,
      repository: pullRequest.repository,
    };
    const traces = new TraceWriter(
      run,
      { id: run.id, kind: 'agent' },
      this.clock,
      this.database,
      this.events,
      this.runs,
      this.secrets,
    );
    const active: ActiveRun = newActiveRun(run, traces, {
      capturedCount: 0,
      input: {
        attachmentFiles: [],
        images: [],
        instructions: buildReviewerInstructions(input),
        prompt: buildReviewerPrompt(input),
      },
    });
    this.running.set(review.id, { active, pullRequest, review });
    const stopped = this.running.stopped(active);
    // In a temporary detached worktree at the PR's head: never the person's checkout or the RD worktree.
    void this.worktrees
      .make(review.id, review.targetHeadSha, pullRequest.number)
      .catch((err: unknown) => {
        active.outcome.failure = `the reviewer's worktree could not be made: ${(err as Error).message}`;
        throw err;
      })
      .then((cwd) => {
        if (cwd !== null) {
          active.cwd = cwd;
          active.traces.add({
            detail: null,
            kind: 'lifecycle',
            nativeType: 'worktree',
            status: 'completed',
            title: `Review worktree ${cwd} at ${review.targetHeadSha}`,
            toolCallId: null,
            toolName: null,
          });
        }
        return this.launcher.start(active, stopped, (end) => void this.finish(review.id, end));
      })
      .catch((err: unknown) => {
        this.logger.error(`could not launch reviewer run ${run.id}: ${(err as Error).message}`);
        void this.finish(review.id, {
          code: null,
          reason: 'spawn_failed',
          signal: null,
          stderr: (err as Error).message,
        });
      });
  }

  /** The reviewer's process tree is gone: record the outcome and deliver its summary. */
  private async finish(reviewId: string, end: ProcessEnd): Promise<void> {
    const entry = this.running.get(reviewId);
    if (!entry) {
      return;
    }
    const { active, pullRequest, review } = entry;
    this.launcher.handle(active, active.parser?.end({ code: end.code, signal: end.signal, stderr: end.stderr }) ?? []);
    await active.writes;
    await active.traces.flush();
    if (active.cwd !== undefined) {
      // Gone before the review is recorded as over (a leftover is swept at the next start).
      await this.worktrees
        .remove(active.cwd)
        .catch((err: unknown) =>
          this.logger.warn(`could not remove the review worktree ${active.cwd}: ${(err as Error).message}`),
        );
    }
    let status: FinalRunStatus = outcomeOf(active, end);
    const summary = active.lastAssistantText?.trim() ?? '';
    if (status === 'succeeded' && summary === '') {
      status = 'failed';
      active.outcome.failure = 'the reviewer finished without a summary';
    }
    const error =
      status === 'succeeded' || status === 'cancelled'
        ? null
        : this.secrets.mask(errorOf(active, end, status, 30 * 60));
    try {
      await this.conversation.deliver(
        review.requirementId,
        async (tx, rows) => {
          const now = this.clock.nowIso();
          const run = this.runs.change(
            tx,
            active.run,
            runEndFields(active, { error, exitCode: end.code, now, status, usage: active.usage }),
          );
          const reviewStatus: ReviewRequestStatus = status === 'timed_out' ? 'failed' : status;
          const current = await this.repository.findByIdIn(tx, review.id);
          if (!current) {
            throw new Error(`review ${review.id} is gone`); // purged with its Requirement meanwhile: nothing to record
          }
          // The verdict line the instructions ask for (issue 18 §3): what the review loop stops on.
          const verdict = status === 'succeeded' ? parseReviewVerdict(summary) : null;
          const updated: ReviewRequestEntity = {
            ...current,
            error,
            finishedAt: now,
            status: reviewStatus,
            updatedAt: now,
            verdict,
          };
          this.repository.update(
            tx,
            { error, finishedAt: now, status: reviewStatus, updatedAt: now, verdict },
            { id: review.id },
          );
          const reviewRequest = toReviewRequestResponse(updated);
          await this.events.append(tx, {
            actor: { id: run.id, kind: 'agent' },
            payload: {
              requirement: toRequirementResponse(rows.requirement, rows.session),
              reviewRequest,
              run: toRunResponse(run),
              // Ended by the manager's stop: no end to react to (the review loop looks again after the next start).
              ...(this.running.stopping ? { managerStopped: true as const } : {}),
            },
            requirementId: review.requirementId,
            runId: run.id,
            type: runEndEventType(status),
          });
          const metadata = {
            headSha: review.targetHeadSha,
            pullRequestId: review.pullRequestId,
            reviewRequestId: review.id,
            stale: reviewRequest.stale,
          };
          const subject = `${pullRequest.repository}#${pullRequest.number} (head ${review.targetHeadSha.slice(0, 12)}${reviewRequest.stale ? ', stale: the PR has moved since' : ''})`;
          if (status === 'succeeded') {
            // Delivered to RD unless the Requirement was cancelled; a done one is reopened, as by a person's reply.
            const deliverToRd = rows.requirement.status !== 'cancelled';
            const { message } = await this.messages.append(
              tx,
              rows,
              { author: 'reviewer', body: `Review of ${subject}:\n\n${summary}`, deliverToRd, metadata, runId: run.id },
              { id: run.id, kind: 'agent' },
            );
            await this.runEndSteps(tx, rows, { pullRequest, review: updated, status: reviewStatus });
            return { message, wake: deliverToRd };
          }
          const what = status === 'cancelled' ? 'was cancelled' : `failed: ${error}`;
          const { message } = await this.messages.append(
            tx,
            rows,
            {
              args: {
                error,
                headSha: review.targetHeadSha.slice(0, 12),
                pullRequest: `${pullRequest.repository}#${pullRequest.number}`,
                stale: reviewRequest.stale,
              },
              author: 'system',
              body: `The review of ${subject} ${what}`,
              code: status === 'cancelled' ? 'review.cancelled' : 'review.failed',
              deliverToRd: false,
              metadata,
              runId: run.id,
            },
            { id: run.id, kind: 'agent' },
          );
          await this.runEndSteps(tx, rows, { pullRequest, review: updated, status: reviewStatus });
          return { message, wake: false };
        },
        { id: active.run.id, kind: 'agent' },
      );
      this.logger.log({
        msg: `review ${status}`,
        pullRequestId: review.pullRequestId,
        reviewRequestId: review.id,
        runId: active.run.id,
      });
    } catch (err) {
      this.logger.error(`could not record the end of review ${review.id}: ${(err as Error).message}`);
      // At least end it, or the PR could not be reviewed again until a restart (one active review per PR).
      await this.database
        .write(async (tx) => {
          const now = this.clock.nowIso();
          const error = `the review's outcome could not be recorded: ${(err as Error).message}`.slice(0, 1000);
          this.repository.update(
            tx,
            { error, finishedAt: now, status: 'failed', updatedAt: now },
            { id: review.id, status: 'running' },
          );
          this.runs.update(
            tx,
            { error, finishedAt: now, status: 'failed', updatedAt: now },
            { id: active.run.id, status: 'running' },
          );
        })
        .catch((again: unknown) =>
          this.logger.error(`could not fail review ${review.id}: ${(again as Error).message}`),
        );
    } finally {
      this.running.delete(reviewId);
    }
  }

  private runEndSteps(tx: UnitOfWork, rows: RequirementRows, end: ReviewEnd): Promise<void> {
    return this.domainEvents.emit('review.ending', tx, rows, end).then(() => undefined);
  }

  /** A review of a head the PR has moved away from is stale; marked in the PR update's unit. */
  @OnDomainEvent('pullRequest.headChanged')
  async markStale(tx: UnitOfWork, pullRequest: PullRequestEntity): Promise<HeadChangeExtras> {
    const reviews = await this.repository.notStaleOtherHeadIn(tx, pullRequest.id, pullRequest.headSha);
    if (reviews.length === 0) {
      return {};
    }
    const now = this.clock.nowIso();
    this.repository.update(tx, { stale: true, updatedAt: now }, { id: reviews.map((r) => r.id) });
    for (const review of reviews) {
      const entry = this.running.get(review.id);
      if (entry) {
        entry.review.stale = true;
      }
    }
    return { reviewRequests: reviews.map((r) => toReviewRequestResponse({ ...r, stale: true, updatedAt: now })) };
  }
}
