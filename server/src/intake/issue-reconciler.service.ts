import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import type { Subscription } from 'rxjs';

import { type Forge, LIMITS, type RequirementSource } from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { leadsJobs } from '../core/database/postgres/postgres-board';
import { DomainError } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { ForgeError } from '../forges/forge.errors';
import type { ForgeIssue, ForgeIssueComment, IssueForge } from '../forges/forge-issues';
import { isOwnComment, untrusted } from '../forges/forge-triggers';
import { FORGE_WORDS, ForgeRegistry } from '../forges/pull-request-forge';
import { GitHubWebhookService } from '../github/github-webhook.service';
import { GitLabWebhookService } from '../gitlab/gitlab-webhook.service';
import { type ForgeRemote, gitLabHosts, hostOf, remotePath } from '../landing/forge-remote';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { IssueImport } from './issue-import.service';
import { ISSUE_WRITE_BACK_MARKER } from './issue-write-back';
import { WorkspaceRemotes } from './workspace-remotes';

/** Each forge's issue comments are receipted under its own trigger. */
export const ISSUE_COMMENT_TRIGGERS: Readonly<Record<Forge, string>> = {
  github: 'github.issue.comment',
  gitlab: 'gitlab.issue.comment',
};
const ACTORS: Readonly<Record<Forge, { id: string; kind: 'trigger' }>> = {
  github: { id: 'github.issues', kind: 'trigger' },
  gitlab: { id: 'gitlab.issues', kind: 'trigger' },
};
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
/** Looks an issue that failed is read again by number before it is left until it changes. */
const RETRY_ATTEMPTS = 5;
/** Requirements whose issue is read whole (after a start, or imported since) per repository per look. */
const FRESH_PER_LOOK = 20;
/** The forge's `since` is compared with its own clock: a first look reaches this far back. */
const CLOCK_MARGIN_MS = 5 * 60_000;
const SHUTDOWN_WAIT_MS = 10_000;
/** Issues whose last look is remembered (forgotten ones are looked at once more: receipts keep that harmless). */
const OBSERVED_MAX = 10_000;

export interface IssueReconcileReport {
  repositories: number;
  /** Issues the forge said changed. */
  changed: number;
  /** Comments handed to agents (or recorded, the manager's own). */
  comments: number;
  /** Requirements made by label intake. */
  imported: number;
  failed: number;
}

/** One repository as a look reads it: its forge, and its imported Requirements still open. */
interface Repository {
  /** `forge:repository`, lower case. */
  key: string;
  forge: IssueForge;
  /** `owner/repo`, or GitLab's project path, as the forge spells it. */
  repository: string;
  rows: Imported[];
}

/** What one look spends across its repositories. */
interface Look {
  /** Requirements label intake may still make. */
  imports: number;
  /** Per repository key, then login: whether that labeller may triage (asked once a look). */
  trusted: Map<string, Map<string, boolean>>;
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
 * when `intakeStart` is `start`. Only the workspace's GitHub and GitLab remotes are ever read for
 * intake. A webhook's issue or issue-comment event (either forge's) makes the next look come at once.
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
  /** Requirements whose issue's comments since the import were read (since the start): the repository-wide read takes over. */
  private readonly covered = new Set<string>();
  /** Per Requirement not covered yet: where its own comment read goes on (it stopped at its cap). */
  private readonly firstCursors = new Map<string, string>();
  /** Repositories owed a repository-wide comment read (the last one failed or stopped at its cap). */
  private readonly commentsDue = new Map<string, Set<number>>();
  /** Per repository: issues that failed, by number, with their attempts. */
  private readonly retries = new Map<string, Map<number, number>>();
  private lastLookAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private pokeTimer: NodeJS.Timeout | undefined;
  private subscriptions: Subscription[] = [];
  private current: Promise<IssueReconcileReport> | null = null;
  private queued: Promise<IssueReconcileReport> | null = null;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly forges: ForgeRegistry,
    private readonly importer: IssueImport,
    private readonly remotes: WorkspaceRemotes,
    private readonly requirements: RequirementsService,
    private readonly delivery: TriggerDeliveryService,
    private readonly webhook: GitHubWebhookService,
    private readonly gitlabWebhook: GitLabWebhookService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule(FIRST_TICK_DELAY_MS);
    this.subscriptions.push(
      this.webhook.issueActivity$.subscribe(() => this.poke()),
      this.gitlabWebhook.issueActivity$.subscribe(() => this.poke()),
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

  /** Looks now; calls during a look share one more look right after it (what they ask for starts after them). */
  reconcile(): Promise<IssueReconcileReport> {
    if (this.current) {
      this.queued ??= this.current.then(() => {
        this.queued = null;
        return this.reconcile();
      });
      return this.queued;
    }
    this.current = this.run()
      .catch((err: unknown): IssueReconcileReport => {
        this.logger.error({ error: (err as Error).message, msg: 'issue look failed' });
        return { changed: 0, comments: 0, failed: 1, imported: 0, repositories: 0 };
      })
      .finally(() => {
        this.current = null;
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
    // A forge without a token is not read; one whose budget is low waits for its reset (the PRs need it more).
    const usable = (kind: Forge): IssueForge | null => {
      const forge = this.forges.get(kind);
      const budget = forge?.configured === true ? forge.budget() : null;
      return forge?.configured !== true ||
        (budget !== null && budget.remaining < BUDGET_FLOOR && Date.parse(budget.resetAt) > Date.now())
        ? null
        : forge;
    };
    this.lastLookAt = Date.now();
    const imported = new Map<string, Imported[]>();
    const gitlabHosts = gitLabHosts(this.configuration.get('gitlabApiUrl'));
    for (const row of await this.requirements.importedOpen()) {
      if (row.source.forge === 'gitlab' && !gitlabHosts.includes(hostOf(row.source.url))) {
        continue; // imported from another GitLab than the one configured now: its token is not this one's
      }
      const key = keyOf(row.source.forge, row.source.repository);
      imported.set(key, [
        ...(imported.get(key) ?? []),
        { id: row.id, importedAtMs: Date.parse(row.source.importedAt), source: row.source },
      ]);
    }
    const labels = this.configuration.get('intakeLabels').map((label) => label.toLowerCase());
    const intake = labels.length > 0 ? await this.remotes.all().catch(() => []) : [];
    const repositories = new Map<string, { kind: Forge; repository: string }>();
    for (const remote of intake) {
      repositories.set(keyOf(remote.forge, remotePath(remote)), { kind: remote.forge, repository: remotePath(remote) });
    }
    for (const [key, rows] of imported) {
      repositories.set(key, { kind: rows[0].source.forge, repository: rows[0].source.repository });
    }
    const look: Look = { imports: IMPORTS_PER_LOOK, trusted: new Map() };
    for (const [key, { kind, repository }] of repositories) {
      const forge = usable(kind);
      if (this.stopped || forge === null) {
        continue;
      }
      report.repositories += 1;
      const where: Repository = { forge, key, repository, rows: imported.get(key) ?? [] };
      try {
        await this.lookAt(where, intake.some(sameRepo(key)) ? labels : [], look, report);
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

  /**
   * One repository: its changed issues (and those to try again), then the comments. `labels`:
   * the intake labels when the repository is one issues are taken in from (else none).
   */
  private async lookAt(where: Repository, labels: string[], look: Look, report: IssueReconcileReport): Promise<void> {
    const { forge, key, repository, rows } = where;
    // Comments from here on are the repository-wide read's; those before, each issue's own first read.
    if (!this.commentCursors.has(key)) {
      this.commentCursors.set(key, isoSeconds(this.clock.now().getTime() - CLOCK_MARGIN_MS));
    }
    const { changed, next } = await this.changedIssues(where);
    const scan = `${key} ${JSON.stringify(labels)}`;
    if (labels.length > 0 && !this.scanned.has(scan)) {
      // Asked as configured: GitLab matches a label filter as written (the comparisons here ignore case).
      changed.push(...(await this.labelled(where, this.configuration.get('intakeLabels'))));
    }
    // What failed before is read again by number (the cursor has moved on without it).
    const retries = this.retries.get(key) ?? new Map<number, number>();
    this.retries.set(key, retries);
    for (const number of [...retries.keys()]) {
      try {
        changed.push(await forge.getIssue(repository, number));
      } catch (err) {
        this.failedAgain(key, retries, number, err as Error);
      }
    }
    // A Requirement not read since the start (or imported since): its issue read whole, once.
    const fresh = rows.filter((row) => !this.covered.has(row.id)).slice(0, FRESH_PER_LOOK);
    for (const row of [...fresh]) {
      try {
        changed.push(await forge.getIssue(repository, row.source.number));
      } catch (err) {
        fresh.splice(fresh.indexOf(row), 1); // read again next look
        if (err instanceof ForgeError && (err.code === 'not_found' || err.details.status === 410)) {
          this.covered.add(row.id); // deleted, or the token cannot see it: nothing of it to read
          this.logger.warn({
            issue: `${key}#${row.source.number}`,
            msg: 'imported issue is gone',
            requirementId: row.id,
          });
        } else {
          report.failed += 1;
          this.logger.warn({
            error: (err as Error).message,
            issue: `${key}#${row.source.number}`,
            msg: 'issue not read',
          });
        }
      }
    }
    report.changed += changed.length;
    let scanAgain = false;
    const commented: Array<{ issue: ForgeIssue; fingerprint: string }> = [];
    for (const issue of dedupe(changed)) {
      const id = `${key}#${issue.number}`;
      // The forge's times may be whole seconds: what changed within one shows in the rest.
      const fingerprint = JSON.stringify([issue.updatedAt, issue.commentCount, issue.state, issue.title, issue.labels]);
      if (this.observed.get(id) === fingerprint && !retries.has(issue.number)) {
        continue; // looked at already (the boundary of `since`, a 304's cached page)
      }
      try {
        const mine = rows.find((r) => r.source.number === issue.number);
        let remember = true;
        if (mine) {
          await this.requirements.applyIssueState(
            mine.id,
            { labels: issue.labels, state: issue.state, title: issue.title },
            ACTORS[mine.source.forge],
          );
          if (this.covered.has(mine.id) && this.commentCounts.get(id) !== issue.commentCount) {
            commented.push({ fingerprint, issue });
            remember = false; // once its comments are read
          }
        } else if (issue.state === 'open' && issue.labels.some((l) => labels.includes(l.toLowerCase()))) {
          if (look.imports === 0) {
            scanAgain = true; // no room this look: the next one's scan finds it again
            remember = false;
          } else {
            const made = await this.takeIn(where, issue, labels, look);
            look.imports -= made;
            report.imported += made;
          }
        }
        if (remember) {
          this.remember(id, fingerprint);
        }
        retries.delete(issue.number);
      } catch (err) {
        report.failed += 1;
        this.failedAgain(key, retries, issue.number, err as Error);
      }
    }
    this.cursors.set(key, next);
    if (labels.length > 0) {
      if (scanAgain) {
        this.scanned.delete(scan);
      } else {
        this.scanned.add(scan);
      }
    }
    if (commented.length > 0) {
      // Owed until a read completes, whatever fails below; the issues whose count moved are named
      // (GitLab reads each of them; GitHub reads the repository's and picks).
      const due = this.commentsDue.get(key) ?? new Set<number>();
      commented.forEach(({ issue }) => due.add(issue.number));
      this.commentsDue.set(key, due);
    }
    for (const row of fresh) {
      try {
        report.comments += await this.firstComments(where, row);
      } catch (err) {
        report.failed += 1;
        this.logger.warn({ error: (err as Error).message, msg: 'issue comments not read', requirementId: row.id });
      }
    }
    if (!this.commentsDue.has(key)) {
      // No covered issue has new comments up to the list's cursor: the repository-wide read may start there.
      const cursor = this.commentCursors.get(key)!;
      this.commentCursors.set(key, Date.parse(next) < Date.parse(cursor) ? cursor : next);
    } else {
      // Every covered one, those covered in this look too: the overlap is harmless (receipts).
      const covered = rows.filter((row) => this.covered.has(row.id));
      const due = [...this.commentsDue.get(key)!];
      const read = await this.readComments(where, covered, due, next).catch((err: Error) => {
        report.failed += 1;
        this.logger.warn({ error: err.message, msg: 'issue comments not read; read again', repository: key });
        return null;
      });
      report.comments += read?.written ?? 0;
      if (read?.complete) {
        this.commentsDue.delete(key);
      } // else the next look reads on from where this one stopped
      for (const { fingerprint, issue } of commented) {
        this.commentCounts.set(`${key}#${issue.number}`, issue.commentCount);
        this.remember(`${key}#${issue.number}`, fingerprint);
      }
    }
  }

  /** An issue that could not be applied: tried again by number next looks, then left to its next change. */
  private failedAgain(key: string, retries: Map<number, number>, number: number, err: Error): void {
    const attempts = (retries.get(number) ?? 0) + 1;
    if (attempts >= RETRY_ATTEMPTS) {
      retries.delete(number);
      this.logger.warn({ error: err.message, issue: `${key}#${number}`, msg: 'issue left until it changes again' });
    } else {
      retries.set(number, attempts);
      this.logger.warn({
        attempts,
        error: err.message,
        issue: `${key}#${number}`,
        msg: 'issue not applied; tried again',
      });
    }
  }

  private remember(id: string, fingerprint: string): void {
    this.observed.delete(id);
    this.observed.set(id, fingerprint);
    if (this.observed.size > OBSERVED_MAX) {
      this.observed.delete(this.observed.keys().next().value!);
    }
  }

  /**
   * The repository's issues changed since the last look (the first look: since a little before
   * now; what the imported ones became meanwhile is read whole), and the next look's `since`.
   * Pages move `since` forward rather than counting pages, so an issue changed meanwhile cannot
   * slip between two of them.
   */
  private async changedIssues({
    forge,
    key,
    repository,
  }: Repository): Promise<{ changed: ForgeIssue[]; next: string }> {
    let since = this.cursors.get(key) ?? isoSeconds(this.clock.now().getTime() - CLOCK_MARGIN_MS);
    let page = 1;
    const changed: ForgeIssue[] = [];
    for (let request = 0; request < PAGES_PER_TICK; request++) {
      const answer = await forge.listIssuesUpdatedSince(repository, since, page);
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
  private async labelled({ forge, repository }: Repository, labels: readonly string[]): Promise<ForgeIssue[]> {
    const found: ForgeIssue[] = [];
    for (const label of labels) {
      for (let page = 1; page <= PAGES_PER_TICK; page++) {
        const { hasNext, items } = await forge.listIssues(repository, {
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
   * A Requirement's issue's comments since its import, read on their own the first time (then
   * covered); a read that stops at its cap goes on from its last comment next look.
   */
  private async firstComments(where: Repository, row: Imported): Promise<number> {
    const since = this.firstCursors.get(row.id) ?? isoSeconds(fromOf(row));
    const comments = await where.forge.listIssueCommentsSince(
      where.repository,
      row.source.number,
      since,
      COMMENTS_PER_LOOK,
    );
    const written = await this.deliver(where, row, comments);
    if (comments.length < COMMENTS_PER_LOOK) {
      this.covered.add(row.id);
      this.firstCursors.delete(row.id);
    } else {
      const last = comments[comments.length - 1];
      // Where the read goes on: GitLab's edits order it (updatedAt); GitHub's list is by creation.
      this.firstCursors.set(row.id, last.updatedAt ?? last.createdAt);
    }
    return written;
  }

  /**
   * The repository's comments written since the last read, to the covered Requirements they
   * belong to. `complete`: nothing was left (else the next look reads on from the last one).
   */
  private async readComments(
    where: Repository,
    rows: Imported[],
    due: readonly number[],
    listed: string,
  ): Promise<{ written: number; complete: boolean }> {
    const { forge, key, repository } = where;
    const since = this.commentCursors.get(key)!;
    const { comments, more } = await forge.listCommentsSince(repository, due, since, COMMENTS_PER_LOOK);
    let written = 0;
    for (const row of rows) {
      const own = comments.filter((c) => c.issueNumber === row.source.number);
      written += own.length > 0 ? await this.deliver(where, row, own) : 0;
    }
    const last = comments[comments.length - 1];
    // `since` includes its own second: the last one is read again next time, and its receipt skips it.
    let cursor = last ? last.updatedAt : since;
    if (forge.kind === 'gitlab' && !more && Date.parse(cursor) > Date.parse(listed)) {
      // GitLab read only the owed issues: another one's note written since the listing is not
      // among them. The next look's listing names that issue; its read must start before the note.
      cursor = listed;
    }
    this.commentCursors.set(key, cursor);
    return { complete: !more, written };
  }

  /**
   * Comments of an imported issue, each once (receipts): the manager's own (its mark, by the
   * token's login) recorded, every other handed to the agent as untrusted input. Comments written
   * before the import's second are in its description.
   */
  private async deliver(
    { forge, repository }: Repository,
    row: Imported,
    comments: readonly ForgeIssueComment[],
  ): Promise<number> {
    const seen = await this.delivery.seenKeys(row.id, `${row.id}:issue-comment:`);
    const me = await forge.login().catch(() => null);
    const name = `${repository}#${row.source.number}`;
    const kind = row.source.forge;
    let written = 0;
    for (const comment of comments) {
      const receiptKey = `${row.id}:issue-comment:${comment.id}`;
      if (seen.has(receiptKey) || Date.parse(comment.createdAt) < fromOf(row)) {
        continue;
      }
      const own =
        me !== null &&
        comment.author === me &&
        (comment.body.includes(ISSUE_WRITE_BACK_MARKER) || isOwnComment(comment.body));
      const outcome = await this.delivery.deliver({
        author: 'reviewer',
        body: `${FORGE_WORDS[kind].name} comment by @${comment.author ?? 'ghost'} on issue ${name} (${comment.url}).\n${untrusted(kind)}\n\n${comment.body}`.slice(
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
        requirementId: row.id,
        source: kind,
        triggerId: ISSUE_COMMENT_TRIGGERS[kind],
      });
      written += outcome.message ? 1 : 0;
    }
    return written;
  }

  /**
   * An issue with an intake label, not imported yet: a Requirement (started when asked). The label
   * counts only when whoever put it there may triage the repository (GitHub's permission: triage,
   * write, maintain or admin; GitLab: Reporter or above), never a bot: anyone may open an issue, an
   * issue form labels it as its author, and a labelling bot acts on the issue's own words.
   */
  private async takeIn(
    { forge, key, repository }: Repository,
    issue: ForgeIssue,
    labels: readonly string[],
    look: Look,
  ): Promise<number> {
    const name = `${repository}#${issue.number}`;
    const cache = look.trusted.get(key) ?? new Map<string, boolean>();
    look.trusted.set(key, cache);
    const { login: labeler, trusted } = await forge.intakeLabeler(repository, issue.number, labels, cache);
    if (!trusted) {
      this.logger.warn({
        issue: name,
        labeler,
        msg: 'intake label not put there by someone who may triage: not taken in',
      });
      return 0;
    }
    try {
      const { items, notStarted } = await this.importer.import(
        {
          forge: forge.kind,
          numbers: [issue.number],
          provider: this.configuration.get('intakeProvider'),
          repository,
          start: this.configuration.get('intakeStart') === 'start',
        },
        ACTORS[forge.kind],
      );
      for (const refused of notStarted) {
        this.logger.warn({
          msg: 'issue taken in, not started',
          reason: refused.reason,
          requirementId: refused.requirementId,
        });
      }
      this.logger.log({ issue: name, labeler, msg: 'issue taken in by label', requirementId: items[0]?.id });
      return items.length;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'already_imported') {
        return 0; // imported meanwhile (by a person, or a look before this one)
      }
      throw err;
    }
  }
}

/** Comments written in the import's own second or later are news; earlier ones are in its description. */
function fromOf(row: Imported): number {
  return Math.floor(row.importedAtMs / 1000) * 1000;
}

function sameRepo(key: string): (remote: ForgeRemote) => boolean {
  return (remote) => keyOf(remote.forge, remotePath(remote)) === key;
}

/** A repository's key: its forge and path, lower case (the same path on two forges is two repositories). */
function keyOf(forge: Forge, repository: string): string {
  return `${forge}:${repository}`.toLowerCase();
}

/** One entry per issue number (the last one read wins). */
function dedupe(issues: ForgeIssue[]): ForgeIssue[] {
  return [...new Map(issues.map((issue) => [issue.number, issue])).values()];
}

/** The forges' `since` form (whole seconds). */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}
