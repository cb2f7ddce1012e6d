import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';

import { leadsJobs } from '../core/database/postgres/postgres-board';
import { RUNTIME, type Runtime } from '../core/runtime';
import type { Subscription } from 'rxjs';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { PullRequestEntity } from '../pull-requests/pull-request.entity';
import { PullRequestsService } from '../pull-requests/pull-requests.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { FORGES, type Forge } from '@libs/contracts';

import {
  GitHubDelivery,
  ciFailureDeliveries,
  commentDeliveries,
  conflictDelivery,
  statusDelivery,
} from './forge-triggers';
import { PullRequestSnapshot, pullRequestKey } from './forge.types';
import { FORGE_WORDS, ForgeRegistry, type PullRequestForge } from './pull-request-forge';

/** Closed PRs are looked at again this rarely (a reopen is noticed; the webhook is faster). */
const CLOSED_RECHECK_MS = 60 * 60 * 1000;
const CLOSED_PER_TICK = 20;
const FIRST_TICK_DELAY_MS = 1_000;
const ACTORS: Readonly<Record<Forge, { id: string; kind: 'trigger' }>> = {
  github: { id: 'github.reconciler', kind: 'trigger' },
  gitlab: { id: 'gitlab.reconciler', kind: 'trigger' },
};
const SHUTDOWN_WAIT_MS = 10_000;

export interface ReconcileReport {
  /** PRs considered. */
  pullRequests: number;
  /** PRs whose full snapshot was fetched (new, or changed since the last look). */
  fetched: number;
  /** Messages written (delivered or recorded). */
  deliveries: number;
  /** PRs that could not be read or applied this time (they are retried next tick). */
  failed: number;
  durationMs: number;
  skippedReason: string | null;
}

/**
 * Brings the forges into the conversation (protocol §5, docs/architecture.md#triggers-and-forges): GitHub's pull
 * requests and GitLab's merge requests alike, each through its forge's client. Each tick reads a cheap
 * summary of every tracked PR (GitHub: one GraphQL request per 100 PRs), fetches the full snapshot only
 * of PRs that are new or changed, and turns what changed into trigger deliveries: status, new
 * comments and reviews, CI failures, conflicts. The first observation of a PR is its baseline:
 * what already existed when it was registered is recorded as seen, never replayed; comments and
 * reviews written after its registration are delivered even then. Ticks never overlap; one PR's
 * failure leaves the others alone; the summary is stored last, so a crash mid-way re-reads
 * the PR and receipts keep each delivery single.
 */
@Injectable()
export class PullRequestReconciler implements BeforeApplicationShutdown, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(PullRequestReconciler.name);
  private timer: NodeJS.Timeout | undefined;
  private subscription: Subscription | undefined;
  private current: Promise<ReconcileReport> | null = null;
  /** PRs a webhook asked to look at as soon as the running tick ends. */
  private readonly requested = new Set<string>();
  private stopped = false;
  private readonly warnedUnconfigured = new Set<Forge | null>();
  private lastInterval: number;

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly forges: ForgeRegistry,
    private readonly pullRequests: PullRequestsService,
    private readonly delivery: TriggerDeliveryService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {
    this.lastInterval = this.configuration.get('pullRequestReconcileIntervalSeconds');
  }

  onApplicationBootstrap(): void {
    this.schedule(this.lastInterval === 0 ? null : FIRST_TICK_DELAY_MS);
    this.subscription = this.configuration.changes$.subscribe(() => {
      const interval = this.configuration.get('pullRequestReconcileIntervalSeconds');
      if (interval !== this.lastInterval) {
        this.lastInterval = interval;
        this.schedule(interval === 0 ? null : Math.min(FIRST_TICK_DELAY_MS, interval * 1000));
      }
    });
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.subscription?.unsubscribe();
  }

  /** A tick in flight stops after the PR it is on (the rest is read again next start), bounded. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.race([this.settled(), new Promise((r) => setTimeout(r, SHUTDOWN_WAIT_MS).unref())]);
  }

  /** Waits for a running tick (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.current) {
      await this.current;
    }
  }

  /**
   * Reconciles now: every tracked PR, or only `ids` (the webhook's). A call during a tick
   * returns that tick; PRs it asked for are looked at right after it.
   */
  reconcile(ids?: readonly string[]): Promise<ReconcileReport> {
    if (ids && ids.length === 0) {
      // Nothing named (another call already took the requested PRs): not "every PR".
      return Promise.resolve({
        deliveries: 0,
        durationMs: 0,
        failed: 0,
        fetched: 0,
        pullRequests: 0,
        skippedReason: null,
      });
    }
    if (this.current) {
      ids?.forEach((id) => this.requested.add(id));
      if (!ids) {
        return this.current;
      }
      return this.current.then(() => this.reconcile(this.takeRequested()));
    }
    this.current = this.run(ids)
      .catch((err: unknown): ReconcileReport => {
        this.logger.error({ error: (err as Error).message, msg: 'reconcile tick failed' });
        return {
          deliveries: 0,
          durationMs: 0,
          failed: 0,
          fetched: 0,
          pullRequests: 0,
          skippedReason: (err as Error).message,
        };
      })
      .finally(() => {
        this.current = null;
      });
    return this.current;
  }

  private takeRequested(): string[] {
    const ids = [...this.requested];
    this.requested.clear();
    return ids;
  }

  private schedule(delayMs: number | null): void {
    clearTimeout(this.timer);
    if (this.stopped || delayMs === null) {
      return;
    }
    this.timer = setTimeout(() => {
      // On a board only the leader polls GitHub (a webhook's or a person's reconcile runs wherever it arrives).
      const tick = leadsJobs(this.runtime) ? this.reconcile() : Promise.resolve();
      void tick.finally(() => {
        const interval = this.configuration.get('pullRequestReconcileIntervalSeconds');
        this.schedule(interval === 0 ? null : interval * 1000);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async run(ids?: readonly string[]): Promise<ReconcileReport> {
    const started = Date.now();
    const report: ReconcileReport = {
      deliveries: 0,
      durationMs: 0,
      failed: 0,
      fetched: 0,
      pullRequests: 0,
      skippedReason: null,
    };
    if (!FORGES.some((kind) => this.forges.get(kind)?.configured)) {
      this.warnUnconfigured(null);
      return { ...report, skippedReason: 'not_configured' };
    }
    const tracked = ids
      ? await this.pullRequests.findByIds(ids)
      : await this.pullRequests.tracked(CLOSED_RECHECK_MS, CLOSED_PER_TICK);
    const byForge = new Map<Forge, PullRequestEntity[]>();
    for (const pr of tracked) {
      byForge.set(pr.forge, [...(byForge.get(pr.forge) ?? []), pr]);
    }
    let configured = 0;
    for (const [kind, prs] of byForge) {
      const forge = this.forges.get(kind);
      if (!forge?.configured) {
        this.warnUnconfigured(kind);
        continue;
      }
      configured += 1;
      report.pullRequests += prs.length;
      try {
        await this.reconcileOn(forge, prs, ids !== undefined, report);
      } catch (err) {
        // One forge failing (down, a bug) leaves the others' requests reconciled this tick.
        report.failed += prs.length;
        this.logger.error({ error: (err as Error).message, forge: kind, msg: 'forge not reconciled' });
      }
    }
    if (tracked.length > 0 && configured === 0) {
      return { ...report, durationMs: Date.now() - started, skippedReason: 'not_configured' };
    }
    report.durationMs = Date.now() - started;
    if (report.deliveries > 0 || report.failed > 0) {
      this.logger.log({ ...report, msg: 'pull requests reconciled' });
    }
    return report;
  }

  /** Says once per forge (null: no forge has one) that its PRs are not reconciled for want of a token. */
  private warnUnconfigured(kind: Forge | null): void {
    if (this.warnedUnconfigured.has(kind)) {
      return;
    }
    this.warnedUnconfigured.add(kind);
    const how: Record<Forge, string> = {
      github: 'GITHUB_TOKEN, GH_TOKEN or `gh auth login`',
      gitlab: 'GITLAB_TOKEN or `glab auth login`',
    };
    this.logger.warn(
      kind === null
        ? { msg: `no GitHub or GitLab token (${how.github}; ${how.gitlab}): pull requests are not reconciled` }
        : { forge: kind, msg: `no ${FORGE_WORDS[kind].name} token (${how[kind]}): its requests are not reconciled` },
    );
  }

  /** One forge's PRs: summaries, then the snapshots of those that changed (all of them for a webhook's). */
  private async reconcileOn(
    forge: PullRequestForge,
    tracked: PullRequestEntity[],
    named: boolean,
    report: ReconcileReport,
  ): Promise<void> {
    const refs = tracked.map((pr) => ({ number: pr.number, repository: pr.repository }));
    // A webhook names PRs that did change: skip the summary and fetch them whole.
    const summaries = named ? null : await forge.fetchPullRequestSummaries(refs);
    const due = tracked.filter((pr) => {
      if (!summaries) {
        return true;
      }
      const summary = summaries.get(pullRequestKey(pr));
      if (summary?.kind !== 'summary') {
        if (summary) {
          report.failed += 1;
          this.logger.warn({ error: summary.message, msg: 'pull request summary not read', pullRequestId: pr.id });
        }
        return false;
      }
      return pr.githubObservedAt === null || pr.githubFingerprint !== summary.fingerprint;
    });
    report.fetched += due.length;
    if (due.length === 0) {
      return;
    }
    const snapshots = await forge.fetchPullRequests(
      due.map((pr) => ({ number: pr.number, repository: pr.repository })),
    );
    for (const pr of due) {
      if (this.stopped) {
        break; // stopping: this PR's summary was not stored, so the next start looks at it again
      }
      const result = snapshots.get(pullRequestKey(pr));
      if (result?.kind !== 'snapshot') {
        report.failed += 1;
        this.logger.warn({ error: result?.message ?? 'missing', msg: 'pull request not read', pullRequestId: pr.id });
        continue;
      }
      try {
        const summary = summaries?.get(pullRequestKey(pr));
        report.deliveries += await this.observe(pr, result, summary?.kind === 'summary' ? summary.fingerprint : null);
      } catch (err) {
        report.failed += 1;
        this.logger.error({
          error: (err as Error).message,
          msg: 'pull request observation failed',
          pullRequestId: pr.id,
        });
      }
    }
  }

  /** Applies one PR's snapshot; resolves with the number of messages written. */
  private async observe(
    pr: PullRequestEntity,
    snapshot: PullRequestSnapshot,
    fingerprint: string | null,
  ): Promise<number> {
    const baseline = pr.githubObservedAt === null;
    let written = 0;
    const state = {
      baseBranch: snapshot.baseBranch,
      headBranch: snapshot.headBranch,
      headSha: snapshot.headSha,
      status: snapshot.status,
      title: snapshot.title,
      url: snapshot.url,
    };
    // 1. Lifecycle and head: the message commits with the row, so the change is told once.
    // Applied only over the row this tick read: a registration in between (a newer head) wins,
    // and the PR is simply looked at again next tick.
    const unchanged = async (tx: UnitOfWork) => (await this.pullRequests.findIn(tx, pr.id))?.updatedAt === pr.updatedAt;
    const status = statusDelivery(pr, snapshot);
    if (status) {
      const outcome = await this.delivery.deliver(status, {
        alsoWrite: async (tx) => void (await this.pullRequests.applyGitHubState(tx, pr.id, state, ACTORS[pr.forge])),
        guard: unchanged,
      });
      if (outcome.status === 'skipped') {
        return written;
      }
      written += outcome.message ? 1 : 0;
    } else {
      const applied = await this.database.write(async (tx) =>
        (await unchanged(tx)) ? this.pullRequests.applyGitHubState(tx, pr.id, state, ACTORS[pr.forge]) : null,
      );
      if (!applied) {
        return written;
      }
    }
    // 2. Comments, CI failures and conflicts not delivered before (at the baseline: recorded as seen).
    const conflict = conflictDelivery(pr, snapshot);
    const candidates: GitHubDelivery[] = [
      ...commentDeliveries(pr, snapshot),
      ...ciFailureDeliveries(pr, snapshot),
      ...(conflict ? [conflict] : []),
    ];
    const seen =
      candidates.length > 0 ? await this.delivery.seenKeys(pr.requirementId, `${pr.id}:`) : new Set<string>();
    const fresh = candidates.filter((d) => !seen.has(d.receiptKey));
    // At the baseline what was there before the PR was registered is only recorded; a comment or
    // review written since (a bot's, a person's within the first interval) is news, delivered.
    // GitHub's timestamps are whole seconds: one of the registration's own second counts as news.
    const registered = Math.floor(Date.parse(pr.createdAt) / 1000) * 1000;
    const news = baseline ? fresh.filter((d) => d.writtenAt !== null && Date.parse(d.writtenAt) >= registered) : fresh;
    if (baseline) {
      await this.delivery.recordSeen(
        pr.requirementId,
        fresh.filter((d) => !news.includes(d)),
      );
    }
    for (const delivery of news) {
      const outcome = await this.delivery.deliver(delivery);
      written += outcome.message ? 1 : 0;
    }
    // 3. Last: what was seen. Until this commits, the next tick looks at the PR again.
    await this.pullRequests.markObserved(pr.id, { fingerprint, mergeable: snapshot.mergeable });
    return written;
  }
}
