// A GitLab project's issues as the intake and its write-back need them (issue 49 §5): reading
// issues and their notes (newest pages first, bounded), who put an intake label and whether they may
// triage, and the comment or close the manager writes back.
import type { Logger } from '@nestjs/common';

import { ForgeError } from '../forges/forge.errors';
import type { ForgeIssue, ForgeIssueComment, IssueQuery, RepositoryComment } from '../forges/forge-issues';
import { type GitLabHttp, encodeProject } from './gitlab-http';
import { issueOf } from './gitlab-mapping';
import type { GitLabIssue, GitLabLabelEvent, GitLabMember, GitLabNote, GitLabUser } from './gitlab.types';

/** GitLab's access levels from which a label counts for intake: Reporter (20) may triage issues. */
const TRIAGE_ACCESS = 20;
/** Pages of an issue's notes read per call (100 each); `more` says when there were others. */
const NOTE_PAGES = 20;
/** Pages of an issue's label events read (100 each): a label war beyond that is rare. */
const LABEL_EVENT_PAGES = 3;

/** The issue side of one GitLab client (GitLabClient answers `IssueForge` through it). */
export class GitLabIssues {
  constructor(
    private readonly http: GitLabHttp,
    private readonly logger: Logger,
  ) {}

  /** The web root projects live under: the API's root without `/api/v4`. */
  private get webRoot(): string {
    return this.http.baseUrl.replace(/\/api\/v4$/, '');
  }

  async getIssue(repository: string, number: number): Promise<ForgeIssue> {
    return issueOf(await this.http.json<GitLabIssue>('GET', `/projects/${encodeProject(repository)}/issues/${number}`));
  }

  async listIssues(repository: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }> {
    const { items, next } = await this.http.page<GitLabIssue>(`/projects/${encodeProject(repository)}/issues`, {
      order_by: 'created_at',
      page: String(query.page),
      per_page: String(query.perPage),
      sort: 'desc',
      state: query.state === 'open' ? 'opened' : query.state,
      ...(query.labels.length > 0 && { labels: query.labels.join(',') }),
      ...(query.q !== null && { search: query.q }),
    });
    return { hasNext: next !== '', items: items.map(issueOf) };
  }

  async listIssuesUpdatedSince(
    repository: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }> {
    const { items, next } = await this.http.page<GitLabIssue>(`/projects/${encodeProject(repository)}/issues`, {
      order_by: 'updated_at',
      page: String(page),
      per_page: '100',
      sort: 'asc',
      state: 'all',
      updated_after: since,
    });
    const issues = items.map(issueOf);
    return { hasNext: next !== '', items: issues, lastUpdatedAt: issues.at(-1)?.updatedAt ?? null };
  }

  async listIssueComments(
    repository: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }> {
    const { comments, more } = await this.notes(repository, number, null, max);
    return { comments, more };
  }

  async listIssueCommentsSince(
    repository: string,
    number: number,
    since: string,
    max: number,
  ): Promise<ForgeIssueComment[]> {
    return (await this.notes(repository, number, since, max)).comments;
  }

  /**
   * GitLab has no list of a project's notes: the issues asked for are read one by one. What is
   * answered is complete up to its last comment: when an issue's read stopped at `max`, only the
   * comments up to the earliest such stop are, and `more` says the rest comes next time.
   */
  async listCommentsSince(
    repository: string,
    numbers: readonly number[],
    since: string,
    max: number,
  ): Promise<{ comments: RepositoryComment[]; more: boolean }> {
    const all: RepositoryComment[] = [];
    let complete: number | null = null;
    for (const number of numbers) {
      const read = await this.notes(repository, number, since, max);
      all.push(...read.comments.map((comment) => ({ ...comment, issueNumber: number })));
      const last = Date.parse(read.comments.at(-1)?.updatedAt ?? since);
      if (read.more && (complete === null || last < complete)) {
        complete = last;
      }
    }
    const at = (comment: RepositoryComment) => Date.parse(comment.updatedAt);
    const sorted = all.sort((a, b) => at(a) - at(b) || a.id - b.id);
    return complete === null
      ? { comments: sorted, more: false }
      : { comments: sorted.filter((comment) => at(comment) <= complete), more: true };
  }

  async intakeLabeler(
    repository: string,
    number: number,
    labels: readonly string[],
    trustedCache: Map<string, boolean>,
  ): Promise<{ login: string | null; trusted: boolean }> {
    const project = encodeProject(repository);
    const events: GitLabLabelEvent[] = [];
    let page = '1';
    for (let read = 0; read < LABEL_EVENT_PAGES && page !== ''; read++) {
      const answer = await this.http.page<GitLabLabelEvent>(
        `/projects/${project}/issues/${number}/resource_label_events`,
        {
          page,
          per_page: '100',
        },
      );
      events.push(...answer.items);
      page = answer.next;
    }
    // Per wanted label, its last event: the label counts when that is an add (it is still there).
    const last = new Map<string, GitLabLabelEvent>();
    for (const event of events) {
      const name = event.label?.name?.toLowerCase();
      if (name !== undefined && labels.some((label) => label.toLowerCase() === name)) {
        last.set(name, event);
      }
    }
    const added = [...last.values()].filter((event) => event.action === 'add' && event.user !== null).at(-1);
    const user = added?.user ?? null;
    if (user === null) {
      return { login: null, trusted: false };
    }
    const cached = trustedCache.get(user.username);
    if (cached !== undefined) {
      return { login: user.username, trusted: cached };
    }
    const trusted = await this.mayTriage(project, user);
    trustedCache.set(user.username, trusted);
    return { login: user.username, trusted };
  }

  /** Reporter or more of the project, and no bot (GitLab's flag, or a project or group bot's name when a private profile hides it). */
  private async mayTriage(project: string, user: GitLabUser): Promise<boolean> {
    const account = await this.http.json<GitLabUser>('GET', `/users/${user.id}`);
    if (account.bot === true || /^(project|group)_\d+_bot(_|$)/.test(user.username)) {
      return false;
    }
    try {
      const member = await this.http.json<GitLabMember>('GET', `/projects/${project}/members/all/${user.id}`);
      return member.access_level >= TRIAGE_ACCESS;
    } catch (err) {
      if (err instanceof ForgeError && err.code === 'not_found') {
        return false; // not a member at all
      }
      throw err;
    }
  }

  async commentOnIssue(repository: string, number: number, body: string): Promise<unknown> {
    return this.http.json('POST', `/projects/${encodeProject(repository)}/issues/${number}/notes`, { body: { body } });
  }

  async closeIssue(repository: string, number: number): Promise<void> {
    await this.http.json('PUT', `/projects/${encodeProject(repository)}/issues/${number}`, {
      body: { state_event: 'close' },
    });
  }

  /**
   * An issue's notes, GitLab's own system notes left out, oldest first. Without `since`: the first
   * ones by creation. With `since`: those updated at or after it, read newest first (GitLab's notes
   * take no `since`) back to it, so a long history before it costs nothing; at most `max`, the
   * oldest of them (`more`: there were others). A history past NOTE_PAGES newer than `since` is
   * read from its newest end and the older rest left (said in the log), never stuck on.
   */
  private async notes(
    repository: string,
    number: number,
    since: string | null,
    max: number,
  ): Promise<{ comments: Array<ForgeIssueComment & { updatedAt: string }>; more: boolean }> {
    const url = `${this.webRoot}/${repository}/-/issues/${number}`;
    const from = since === null ? null : Date.parse(since);
    const comments: Array<ForgeIssueComment & { updatedAt: string }> = [];
    let page = '1';
    let reachedSince = false;
    for (let read = 0; read < NOTE_PAGES && page !== '' && !reachedSince; read++) {
      const answer = await this.http.page<GitLabNote>(`/projects/${encodeProject(repository)}/issues/${number}/notes`, {
        order_by: from === null ? 'created_at' : 'updated_at',
        page,
        per_page: '100',
        sort: from === null ? 'asc' : 'desc',
      });
      for (const note of answer.items) {
        const updatedAt = note.updated_at ?? note.created_at;
        if (from !== null && Date.parse(updatedAt) < from) {
          reachedSince = true;
          break;
        }
        if (!note.system) {
          comments.push({
            author: note.author?.username ?? null,
            body: note.body ?? '',
            createdAt: note.created_at,
            id: note.id,
            updatedAt,
            url: `${url}#note_${note.id}`,
          });
        }
        if (from === null && comments.length > max) {
          return { comments: comments.slice(0, max), more: true };
        }
      }
      page = answer.next;
    }
    if (from !== null && !reachedSince && page !== '') {
      this.logger.warn({
        issue: `${repository}#${number}`,
        msg: 'GitLab notes past the read limit left unread',
        since,
      });
    }
    if (from === null) {
      return { comments, more: page !== '' };
    }
    const oldestFirst = comments.reverse();
    return { comments: oldestFirst.slice(0, max), more: oldestFirst.length > max };
  }
}
