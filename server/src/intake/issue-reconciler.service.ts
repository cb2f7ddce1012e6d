import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import type { Subscription } from 'rxjs';

import { LIMITS, type RequirementSource } from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { leadsJobs } from '../core/database/postgres/postgres-board';
import { DomainError } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { GITHUB_CLIENT, type GitHubClient, type GitHubIssue } from '../github/github-client';
import { UNTRUSTED, isOwnComment } from '../github/github-triggers';
import { GitHubWebhookService } from '../github/github-webhook.service';
import type { GitHubRemote } from '../landing/github-remote';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { IssueImport } from './issue-import.service';
import { ISSUE_WRITE_BACK_MARKER } from './issue-write-back';
import { WorkspaceRemotes } from './workspace-remotes';

export const ISSUE_COMMENT_TRIGGER = 'github.issue.comment';
const ACTOR = { id: 'github.issues', kind: 'trigger' as const };
const FIRST_TICK_DELAY_MS = 1_000;
/** A webhook's poke waits this long, so a burst of events (labels, a comment) is one look. */
const POKE_DELAY_MS = 500;
/** Pages of changed issues one tick reads per repository (100 each); the rest next tick. */
const PAGES_PER_TICK = 5;
/** New comments of a repository read per look (the rest: the next look, from the last one read). */
const COMMENTS_PER_LOOK = 500;
/** Requirements label intake makes in one look at most (the rest: the next looks). */
const IMPORTS_PER_LOOK = 10;
/** Looks a webhook's events bring are this far apart at least (a flood of comments is one look). */
const POKE_SPACING_MS = 5_000;
/** Below this many core requests left, looks wait for the reset (the PRs' reconciler needs them more). */
const BUDGET_FLOOR = 200;
/** Authors GitHub says may triage the repository: their labels count (see takeIn). */
const TRUSTED_AUTHORS: ReadonlySet<string> = new Set(['OWNER', 'MEMBER', 'COLLABORATOR']);
/** GitHub's `since` is compared with its own clock: the first look reaches this far before the oldest import. */
const CLOCK_MARGIN_MS = 5 * 60_000;
const SHUTDOWN_WAIT_MS = 10_000;
/** Issues whose last look is remembered (forgotten ones are looked at once more: receipts keep that harmless). */
const OBSERVED_MAX = 10_000;

export interface IssueReconcileReport {
  repositories: number;
  /** Issues GitHub said changed. */
  changed: number;
  /** Comments handed to agents (or recorded, the manager's own). */
  comments: number;
  /** Requirements made by label intake. */
  imported: number;
  failed: number;
}

/** An imported Requirement still open, as the tick reads it. */
interface Imported {
  id: string;
  source: RequirementSource;
  importedAtMs: number;
}

/**
 * The tracker's side of imported work (issue 49 §3 and §4), on the PR reconciler's interval: for
 * each repository that has open imported Requirements (or takes issues in by label), one
 * conditional request lists the issues changed since the last look (unchanged: a free 304).
 * An imported issue's new state (closed elsewhere, retitled, relabelled) is kept on its
 * Requirement's `source`; its new comments reach the agent as untrusted input through the trigger
 * path (receipts: once, across restarts; the manager's own write-backs are recorded, not
 * handed on). An issue that has or gains one of `intakeLabels` becomes a Requirement, started
 * when `intakeStart` is `start`. Only the workspace's GitHub remotes are ever read for intake. A
 * webhook's `issues` or `issue_comment` event makes the next look come at once.
 */
@Injectable()
export class IssueReconciler implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger(IssueReconciler.name);
  /** Per repository (lower case): GitHub's `updated_at` of the last change seen, the next look's `since`. */
  private readonly cursors = new Map<string, string>();
  /** Per issue (`repo#number`, lower case): what it was when last looked at; the same again is skipped. */
  private readonly observed = new Map<string, string>();
  /** Repositories and labels whose open labelled issues were read whole once since the start. */
  private readonly scanned = new Set<string>();
  /** Per repository: GitHub's time of the last comment read (the next read starts there). */
  private readonly commentCursors = new Map<string, string>();
  /** Per issue (`repo#number`): how many comments it had when they were last read. */
  private readonly commentCounts = new Map<string, number>();
  private lastLookAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private pokeTimer: NodeJS.Timeout | undefined;
  private subscriptions: Subscription[] = [];
  private current: Promise<IssueReconcileReport> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    private readonly importer: IssueImport,
    private readonly remotes: WorkspaceRemotes,
    private readonly requirements: RequirementsService,
    private readonly delivery: TriggerDeliveryService,
    private readonly webhook: GitHubWebhookService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule(FIRST_TICK_DELAY_MS);
    this.subscriptions.push(
      this.webhook.issueActivity$.subscribe(() => this.poke()),
      this.configuration.changes$.subscribe(() => this.poke()),
    );
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.pokeTimer);
    this.subscriptions.forEach((s) => s.unsubscribe());
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.pokeTimer);
    await Promise.race([this.current, new Promise((r) => setTimeout(r, SHUTDOWN_WAIT_MS).unref())]);
  }

  /** A look soon (a webhook's event, a configuration change): one for a burst. */
  poke(): void {
    if (this.stopped || this.pokeTimer) {
      return;
    }
    const wait = Math.max(POKE_DELAY_MS, this.lastLookAt + POKE_SPACING_MS - Date.now());
    this.pokeTimer = setTimeout(() => {
      this.pokeTimer = undefined;
      if (leadsJobs(this.runtime)) {
        void this.reconcile();
      }
    }, wait);
    this.pokeTimer.unref();
  }

  /** Looks now; a call during a look gets one more look right after it. */
  reconcile(): Promise<IssueReconcileReport> {
    if (this.current) {
      this.again = true;
      return this.current;
    }
    this.current = this.run()
      .catch((err: unknown): IssueReconcileReport => {
        this.logger.error({ error: (err as Error).message, msg: 'issue look failed' });
        return { changed: 0, comments: 0, failed: 1, imported: 0, repositories: 0 };
      })
      .finally(() => {
        this.current = null;
        if (this.again && !this.stopped) {
          this.again = false;
          void this.reconcile();
        }
      });
    return this.current;
  }

  private schedule(delayMs: number | null): void {
    clearTimeout(this.timer);
    if (this.stopped || delayMs === null) {
      return;
    }
    this.timer = setTimeout(() => {
      const interval = this.configuration.get('pullRequestReconcileIntervalSeconds');
      const tick = interval > 0 && leadsJobs(this.runtime) ? this.reconcile() : Promise.resolve();
      void tick.finally(() => this.schedule(Math.max(interval, 5) * 1000));
    }, delayMs);
    this.timer.unref();
  }

  private async run(): Promise<IssueReconcileReport> {
    const report: IssueReconcileReport = { changed: 0, comments: 0, failed: 0, imported: 0, repositories: 0 };
    const core = this.github.configured ? this.github.rateLimit().core : null;
    if (
      !this.github.configured ||
      (core !== null && core.remaining < BUDGET_FLOOR && Date.parse(core.resetAt) > Date.now())
    ) {
      return report; // no token, or the budget is kept for the PRs (the next look after the reset)
    }
    this.lastLookAt = Date.now();
    const imported = new Map<string, Imported[]>();
    for (const row of await this.requirements.importedOpen()) {
      if (row.source.forge !== 'github') {
        continue;
      }
      const repo = row.source.repository.toLowerCase();
      imported.set(repo, [
        ...(imported.get(repo) ?? []),
        { id: row.id, importedAtMs: Date.parse(row.source.importedAt), source: row.source },
      ]);
    }
    const labels = this.configuration.get('intakeLabels').map((label) => label.toLowerCase());
    const intake = labels.length > 0 ? await this.remotes.all().catch(() => []) : [];
    const repositories = new Map<string, { owner: string; repo: string }>();
    for (const remote of intake) {
      repositories.set(`${remote.owner}/${remote.repo}`.toLowerCase(), remote);
    }
    for (const [key, rows] of imported) {
      const [owner, repo] = rows[0].source.repository.split('/');
      repositories.set(key, { owner, repo });
    }
    report.repositories = repositories.size;
    const room = { imports: IMPORTS_PER_LOOK };
    for (const [key, { owner, repo }] of repositories) {
      if (this.stopped) {
        break;
      }
      try {
        const takesIn = intake.some(sameRepo(key));
        const scan = `${key} ${JSON.stringify(labels)}`;
        const { changed, next } = await this.changedIssues(key, owner, repo, imported.get(key) ?? []);
        if (takesIn && !this.scanned.has(scan)) {
          changed.push(...(await this.labelled(owner, repo, labels)));
        }
        report.changed += changed.length;
        // An issue that failed (or waits for room) keeps the cursor at its change: read again next look.
        let cursor = next;
        const pin = (issue: GitHubIssue) => {
          cursor = issue.updatedAt < cursor ? issue.updatedAt : cursor;
        };
        const rows = imported.get(key) ?? [];
        const commented: GitHubIssue[] = [];
        for (const issue of dedupe(changed)) {
          const id = `${key}#${issue.number}`;
          // GitHub's times are whole seconds: what changed within one shows in the rest.
          const fingerprint = JSON.stringify([
            issue.updatedAt,
            issue.commentCount,
            issue.state,
            issue.title,
            issue.labels,
          ]);
          if (this.observed.get(id) === fingerprint) {
            continue; // looked at already (the boundary of `since`, a 304's cached page)
          }
          try {
            const mine = rows.find((r) => r.source.number === issue.number);
            let done = true;
            if (mine) {
              await this.requirements.applyIssueState(
                mine.id,
                { labels: issue.labels, state: issue.state, title: issue.title },
                ACTOR,
              );
              if (this.commentCounts.get(id) !== issue.commentCount) {
                commented.push(issue);
                done = false; // remembered once its comments are read
              }
            } else if (
              takesIn &&
              issue.state === 'open' &&
              issue.labels.some((l) => labels.includes(l.toLowerCase()))
            ) {
              if (room.imports === 0) {
                done = false;
              } else {
                const made = await this.takeIn(owner, repo, issue, labels);
                room.imports -= made;
                report.imported += made;
              }
            }
            if (done) {
              this.remember(id, fingerprint);
            } else if (!commented.includes(issue)) {
              pin(issue);
            }
          } catch (err) {
            report.failed += 1;
            pin(issue);
            this.logger.warn({ error: (err as Error).message, issue: id, msg: 'issue not applied; looked at again' });
          }
        }
        if (commented.length > 0) {
          // One request for the comments of every issue of the repository that has new ones.
          const read = await this.readComments(key, owner, repo, rows).catch((err: Error) => {
            report.failed += 1;
            this.logger.warn({ error: err.message, msg: 'issue comments not read; read again', repository: key });
            return null;
          });
          report.comments += read?.written ?? 0;
          for (const issue of commented) {
            const id = `${key}#${issue.number}`;
            if (read?.complete) {
              this.commentCounts.set(id, issue.commentCount);
              this.remember(
                id,
                JSON.stringify([issue.updatedAt, issue.commentCount, issue.state, issue.title, issue.labels]),
              );
            } else {
              pin(issue);
            }
          }
        }
        this.cursors.set(key, cursor);
        if (takesIn) {
          this.scanned.add(scan);
        }
      } catch (err) {
        report.failed += 1;
        this.logger.warn({ error: (err as Error).message, msg: 'issues not read', repository: key });
      }
    }
    if (report.comments > 0 || report.imported > 0 || report.failed > 0) {
      this.logger.log({ ...report, msg: 'issues reconciled' });
    }
    return report;
  }

  private remember(id: string, fingerprint: string): void {
    this.observed.delete(id);
    this.observed.set(id, fingerprint);
    if (this.observed.size > OBSERVED_MAX) {
      this.observed.delete(this.observed.keys().next().value!);
    }
  }

  /**
   * The repository's issues changed since the last look (the first look: since its oldest open
   * import), and the next look's `since`. Pages move `since` forward rather than counting pages,
   * so an issue changed meanwhile cannot slip between two of them.
   */
  private async changedIssues(
    key: string,
    owner: string,
    repo: string,
    rows: Imported[],
  ): Promise<{ changed: GitHubIssue[]; next: string }> {
    const oldest = Math.min(this.clock.now().getTime(), ...rows.map((r) => r.importedAtMs));
    let since = this.cursors.get(key) ?? isoSeconds(oldest - CLOCK_MARGIN_MS);
    let page = 1;
    const changed: GitHubIssue[] = [];
    for (let request = 0; request < PAGES_PER_TICK; request++) {
      const answer = await this.github.listIssuesUpdatedSince(owner, repo, since, page);
      changed.push(...answer.items);
      const last = answer.lastUpdatedAt ?? since;
      if (!answer.hasNext) {
        // `since` includes its own second: the last change is answered again, the page unchanged (a free 304).
        return { changed, next: last };
      }
      // A full page: on from its last change, or (a hundred changes in one second) its next page.
      page = last === since ? page + 1 : 1;
      since = last;
    }
    return { changed, next: since };
  }

  /** Open issues that have one of the labels now (the first look after a start or a change of labels). */
  private async labelled(owner: string, repo: string, labels: readonly string[]): Promise<GitHubIssue[]> {
    const found: GitHubIssue[] = [];
    for (const label of labels) {
      for (let page = 1; page <= PAGES_PER_TICK; page++) {
        const { hasNext, items } = await this.github.listIssues(owner, repo, {
          labels: [label],
          page,
          perPage: 100,
          q: null,
          state: 'open',
        });
        found.push(...items);
        if (!hasNext) {
          break;
        }
      }
    }
    return found;
  }

  /**
   * The repository's comments written since the last read (the first: since its oldest open
   * import), to the imported Requirements they belong to: each once (receipts), the manager's own
   * recorded, the others handed to the agent as untrusted input. `complete`: nothing was left.
   */
  private async readComments(
    key: string,
    owner: string,
    repo: string,
    rows: Imported[],
  ): Promise<{ written: number; complete: boolean }> {
    // Comments written in the import's own second or later; earlier ones are in its description.
    const fromOf = (row: Imported) => Math.floor(row.importedAtMs / 1000) * 1000;
    const since = this.commentCursors.get(key) ?? isoSeconds(Math.min(...rows.map(fromOf)));
    const comments = await this.github.listRepositoryCommentsSince(owner, repo, since, COMMENTS_PER_LOOK);
    const byNumber = new Map(rows.map((row) => [row.source.number, row]));
    const seen = new Map<string, Set<string>>();
    let written = 0;
    for (const comment of comments) {
      const mine = byNumber.get(comment.issueNumber);
      if (!mine || Date.parse(comment.createdAt) < fromOf(mine)) {
        continue;
      }
      if (!seen.has(mine.id)) {
        seen.set(mine.id, await this.delivery.seenKeys(mine.id, `${mine.id}:issue-comment:`));
      }
      const receiptKey = `${mine.id}:issue-comment:${comment.id}`;
      if (seen.get(mine.id)!.has(receiptKey)) {
        continue;
      }
      const own = comment.body.includes(ISSUE_WRITE_BACK_MARKER) || isOwnComment(comment.body);
      const name = `${owner}/${repo}#${comment.issueNumber}`;
      const outcome = await this.delivery.deliver({
        author: 'reviewer',
        body: `GitHub comment by @${comment.author ?? 'ghost'} on issue ${name} (${comment.url}).\n${UNTRUSTED}\n\n${comment.body}`.slice(
          0,
          LIMITS.messageLength,
        ),
        deliverToRd: !own,
        metadata: {
          author: comment.author,
          commentKind: 'issue-comment',
          commentUrl: comment.url,
          issue: name,
          ownComment: own,
          untrusted: true,
        },
        receiptKey,
        requirementId: mine.id,
        source: 'github',
        triggerId: ISSUE_COMMENT_TRIGGER,
      });
      written += outcome.message ? 1 : 0;
    }
    const last = comments[comments.length - 1];
    // `since` includes its own second: the last one is read again next time, and its receipt skips it.
    this.commentCursors.set(key, last ? last.updatedAt : since);
    return { complete: comments.length < COMMENTS_PER_LOOK, written };
  }

  /**
   * An issue with an intake label, not imported yet: a Requirement (started when asked). A label
   * counts when someone who may triage the repository put it there: its author is the owner, a
   * member or a collaborator, or someone other than the author labelled it (an issue form's own
   * labels are its author's, and anyone may open an issue).
   */
  private async takeIn(owner: string, repo: string, issue: GitHubIssue, labels: readonly string[]): Promise<number> {
    const name = `${owner}/${repo}#${issue.number}`;
    if (!TRUSTED_AUTHORS.has(issue.authorAssociation)) {
      const labeler = await this.github.lastLabeledBy(owner, repo, issue.number, labels);
      if (labeler === null || labeler.toLowerCase() === (issue.author ?? '').toLowerCase()) {
        this.logger.warn({
          issue: name,
          labeler,
          msg: 'intake label not put there by the repository’s people: not taken in',
        });
        return 0;
      }
    }
    try {
      const { items, notStarted } = await this.importer.import(
        {
          numbers: [issue.number],
          provider: this.configuration.get('intakeProvider'),
          repository: `${owner}/${repo}`,
          start: this.configuration.get('intakeStart') === 'start',
        },
        ACTOR,
      );
      for (const refused of notStarted) {
        this.logger.warn({
          msg: 'issue taken in, not started',
          reason: refused.reason,
          requirementId: refused.requirementId,
        });
      }
      this.logger.log({ issue: name, msg: 'issue taken in by label', requirementId: items[0]?.id });
      return items.length;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'already_imported') {
        return 0; // imported meanwhile (by a person, or a look before this one)
      }
      throw err;
    }
  }
}

function sameRepo(key: string): (remote: GitHubRemote) => boolean {
  return (remote) => `${remote.owner}/${remote.repo}`.toLowerCase() === key;
}

/** One entry per issue number (the last one read wins). */
function dedupe(issues: GitHubIssue[]): GitHubIssue[] {
  return [...new Map(issues.map((issue) => [issue.number, issue])).values()];
}

/** GitHub's timestamp form (whole seconds). */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}
