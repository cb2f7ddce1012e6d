import { Inject, Injectable, Logger } from '@nestjs/common';

import type { AutoReviewOutcome, AutoReviewState, EventActor, ManagerEvent } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { OnDomainEvent } from '../core/domain-events';
import { RUNTIME, type Runtime } from '../core/runtime';
import { OnCommitted } from '../events/on-committed';
import { MessagesService } from '../messages/messages.service';
import type { PullRequestEntity } from '../pull-requests/pull-request.entity';
import type { HeadChangeExtras } from '../pull-requests/pull-request.events';
import { AutoReviewFields, PullRequestsService } from '../pull-requests/pull-requests.service';
import { toAutoReviewSettings } from '../requirements/dto/auto-review.dto';
import type { RequirementRows } from '../requirements/requirements.repository';
import { RequirementsService } from '../requirements/requirements.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import { RUN_ENDS, restingAfter, reviewsEndedAfter } from '../runs/run-ends';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import type { ReviewEnd } from './review.events';
import { ReviewsService } from './reviews.service';

/** The loop's receipts: one review per (PR, head), across restarts (invariant 10). */
const TRIGGER_ID = 'review-loop';
const LOOP_ACTOR: EventActor = { id: TRIGGER_ID, kind: 'trigger' };

/**
 * The cross-model review loop (issue 18 §3, docs/decisions.md "Review loop"). A Requirement
 * with `autoReview` gets a review of each new head of its open PRs once no RD run of it is
 * running (the run that pushed it ended), by the reviewer provider it names, one review per PR
 * at a time. Each review is a round; the loop of a PR ends when a round's verdict line says
 * no findings (`clean`) or when the last allowed round still found something (`max_rounds`),
 * with a system message either way. The reviewer's summary reaches the RD agent as any
 * review's does (ReviewsService), which is what brings the next push.
 */
@Injectable()
export class ReviewLoopService {
  private readonly logger = new Logger(ReviewLoopService.name);

  constructor(
    private readonly database: Database,
    private readonly lifecycle: RunLifecycle,
    private readonly messages: MessagesService,
    private readonly pullRequests: PullRequestsService,
    private readonly requirements: RequirementsService,
    private readonly reviews: ReviewsService,
    private readonly triggers: TriggerDeliveryService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  /**
   * A head seen while an RD run is running waits for the run's end (`runsEnded`); one the
   * reconciler sees at rest (a push from elsewhere) is reviewed at once, once the unit committed.
   */
  @OnDomainEvent('pullRequest.headChanged')
  async headChanged(tx: UnitOfWork, pullRequest: PullRequestEntity): Promise<HeadChangeExtras> {
    tx.afterCommit(() => void this.consider(pullRequest.requirementId));
    return {};
  }

  /**
   * Starts a round for every open PR of the Requirement whose head the loop has not reviewed,
   * when the Requirement has a loop, is not done or cancelled, and no RD run of it is running.
   * Safe to call at any time and any number of times: each (PR, head) gets one review at most.
   */
  /**
   * A run of this runner ended: an RD run that left its session at rest (the heads it pushed
   * meanwhile are reviewed), or a reviewer run (a review that held the PR — a person's, or a
   * round that moved on — may leave a newer head to review).
   */
  @OnCommitted(RUN_ENDS)
  async runsEnded(events: ManagerEvent[]): Promise<void> {
    const runner = this.runtime.board?.runnerId ?? null;
    const ids = new Set([...restingAfter(events, runner), ...reviewsEndedAfter(events, runner)]);
    for (const requirementId of ids) {
      await this.consider(requirementId);
    }
  }

  async consider(requirementId: string): Promise<void> {
    if (this.lifecycle.stopping || this.reviews.stopping) {
      return;
    }
    try {
      // Every RD run's end and every head change come here: reads first, so the common case
      // (no loop, or an RD run still running) costs no write unit. The unit decides again.
      const snapshot = await this.requirements.find(requirementId);
      if (!snapshot || (snapshot.autoReview !== null && snapshot.session.state === 'running')) {
        return;
      }
      if (snapshot.autoReview === null) {
        const { items } = await this.pullRequests.list({ limit: 100, requirementId });
        if (!items.some((pr) => pr.autoReview.state === 'waiting_for_push')) {
          return;
        }
      }
      const started = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        const settings = toAutoReviewSettings(rows.requirement);
        const prs = await this.pullRequests.ofRequirementIn(tx, requirementId);
        if (!settings) {
          // Turned off: no PR waits for a push that would start nothing.
          for (const pr of prs.filter((p) => p.autoReviewState === 'waiting_for_push')) {
            await this.pullRequests.changeAutoReview(tx, pr, { autoReviewState: 'off' }, LOOP_ACTOR);
          }
          return [];
        }
        if (
          rows.requirement.status === 'done' ||
          rows.requirement.status === 'cancelled' ||
          rows.session.state === 'running'
        ) {
          return [];
        }
        const opened: string[] = [];
        for (const pr of prs) {
          if (!(await this.due(tx, pr))) {
            continue;
          }
          const round = pr.autoReviewRound + 1;
          const { review } = await this.reviews.openIn(
            tx,
            rows,
            pr,
            {
              loopRound: { maxRounds: settings.maxRounds, round },
              provider: settings.provider,
              requestedBy: 'review_loop',
            },
            LOOP_ACTOR,
          );
          await this.pullRequests.changeAutoReview(
            tx,
            pr,
            {
              autoReviewHeadSha: pr.headSha,
              autoReviewMaxRounds: settings.maxRounds,
              autoReviewProvider: settings.provider,
              autoReviewRound: round,
              autoReviewState: 'reviewing',
            },
            LOOP_ACTOR,
          );
          opened.push(review.id);
        }
        return opened;
      });
      if (started.length > 0) {
        this.logger.log({ msg: 'review loop rounds started', requirementId, reviewRequestIds: started });
      }
    } catch (err) {
      // Purged or stopping meanwhile: the next run end or head change considers again.
      this.logger.warn(`review loop of ${requirementId} not considered: ${(err as Error).message}`);
    }
  }

  /** Whether a PR needs a round now; takes the (PR, head) receipt when it does. */
  private async due(tx: UnitOfWork, pr: PullRequestEntity): Promise<boolean> {
    const ended = pr.autoReviewState === 'clean' || pr.autoReviewState === 'max_rounds';
    // The reviewer works through `gh` with the GitHub token: a GitLab MR gets no round.
    if (pr.forge !== 'github' || pr.status !== 'open' || ended || pr.autoReviewHeadSha === pr.headSha) {
      return false;
    }
    // One review per PR: its end considers the loop again. (A `reviewing` PR without one lost
    // its round to a stop; it goes on with the next head.)
    if (await this.reviews.runningForIn(tx, pr.id)) {
      return false;
    }
    return this.triggers.claimIn(tx, {
      receiptKey: `${pr.id}:${pr.headSha}`,
      requirementId: pr.requirementId,
      triggerId: TRIGGER_ID,
    });
  }

  /** In a loop review's end unit: where the PR's loop is now, and the system message when it ends. */
  @OnDomainEvent('review.ending')
  async roundEnded(tx: UnitOfWork, rows: RequirementRows, { review, status }: ReviewEnd): Promise<void> {
    if (review.requestedBy !== 'review_loop') {
      return;
    }
    const pr = await this.pullRequests.findIn(tx, review.pullRequestId);
    if (!pr) {
      return;
    }
    const name = `${pr.repository}#${pr.number}`;
    const maxRounds = pr.autoReviewMaxRounds ?? 1;
    let set: AutoReviewFields;
    let ending: string | null = null;
    if (status !== 'succeeded') {
      // Not counted: nothing was learned about the code. The next push gets the round again.
      set = {
        autoReviewOutcome: 'failed',
        autoReviewRound: Math.max(0, pr.autoReviewRound - 1),
        autoReviewState: 'waiting_for_push',
      };
    } else {
      const outcome: AutoReviewOutcome = review.verdict === 'no_findings' ? 'no_findings' : 'findings';
      // A clean verdict on a head the PR has left says nothing of the newest code: not the end.
      const clean = outcome === 'no_findings' && pr.headSha === review.targetHeadSha;
      const state: AutoReviewState = clean
        ? 'clean'
        : pr.autoReviewRound >= maxRounds
          ? 'max_rounds'
          : 'waiting_for_push';
      set = { autoReviewOutcome: outcome, autoReviewState: state };
      const rounds = `${pr.autoReviewRound} round${pr.autoReviewRound === 1 ? '' : 's'}`;
      if (state === 'clean') {
        ending = `Auto review of ${name}: round ${pr.autoReviewRound} found nothing to change at ${review.targetHeadSha.slice(0, 12)}. The review loop ends clean after ${rounds}.`;
      } else if (state === 'max_rounds') {
        ending = `Auto review of ${name}: round ${pr.autoReviewRound} of ${maxRounds} still reported findings. The review loop ends at its limit (${rounds}); a person decides what comes next.`;
      }
    }
    await this.pullRequests.changeAutoReview(tx, pr, set, LOOP_ACTOR);
    if (ending) {
      const metadata = {
        autoReview: { round: pr.autoReviewRound, state: set.autoReviewState },
        pullRequestId: pr.id,
        reviewRequestId: review.id,
      };
      const args = {
        headSha: review.targetHeadSha.slice(0, 12),
        maxRounds,
        pullRequest: name,
        round: pr.autoReviewRound,
      };
      const code = set.autoReviewState === 'clean' ? 'review_loop.clean' : 'review_loop.max_rounds';
      await this.messages.append(
        tx,
        rows,
        { args, author: 'system', body: ending, code, deliverToRd: false, metadata },
        LOOP_ACTOR,
      );
    }
  }
}
