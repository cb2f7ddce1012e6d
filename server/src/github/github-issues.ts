// A repository's issues as the intake and its write-back need them (issue 49): one issue, pages of
// issues and comments (an unchanged page polled again answers 304 through its ETag and costs no
// budget), who put an intake label and what they may do, and the comment or close written back.
import type { ForgeIssue, ForgeIssueComment, IssueQuery } from '../forges/forge-issues';
import { GitHubError } from './github.errors';
import type { GitHubTransport } from './github-transport';

/** Issue pages whose ETags are kept (a few per repository polled). */
const PAGE_CACHE_SIZE = 200;

/** The issue side of one GitHub client (OctokitGitHubClient answers for it). */
export class GitHubIssues {
  /** Issue pages polled with the same `since` until something changes: their ETags make the repeats free. */
  private readonly pages = new Map<
    string,
    { etag: string; value: { items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean } }
  >();

  constructor(private readonly transport: GitHubTransport) {}

  async getIssue(owner: string, repo: string, number: number): Promise<ForgeIssue> {
    this.transport.assertConfigured();
    const response = await this.transport.send('core', () =>
      this.transport.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
        issue_number: number,
        owner,
        repo,
      }),
    );
    return toIssue(response!.data);
  }

  async listIssues(owner: string, repo: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }> {
    this.transport.assertConfigured();
    const response =
      query.q === null
        ? await this.transport.send('core', () =>
            this.transport.octokit.request('GET /repos/{owner}/{repo}/issues', {
              labels: query.labels.length > 0 ? query.labels.join(',') : undefined,
              owner,
              page: query.page,
              per_page: query.perPage,
              repo,
              sort: 'created',
              state: query.state,
            }),
          )
        : await this.transport.send('core', () =>
            this.transport.octokit.request('GET /search/issues', {
              order: 'desc',
              page: query.page,
              per_page: query.perPage,
              // Every qualifier quoted: the person's words are searched for, never read as qualifiers of ours.
              q: [
                `repo:${owner}/${repo}`,
                'is:issue',
                ...(query.state === 'all' ? [] : [`is:${query.state}`]),
                ...query.labels.map((label) => `label:"${label.replace(/"/g, '')}"`),
                (query.q ?? '').replace(/[^\p{L}\p{N}\s._#-]/gu, ' ').trim(),
              ].join(' '),
              sort: 'created',
            }),
          );
    const raw = response!.data as unknown;
    const list = (Array.isArray(raw) ? raw : ((raw as { items?: unknown[] }).items ?? [])) as RawIssue[];
    const link = String(response!.headers.link ?? '');
    return {
      hasNext: /rel="next"/.test(link),
      items: list.map(toIssue).filter((issue) => !issue.pullRequest),
    };
  }

  async listIssueComments(
    owner: string,
    repo: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }> {
    this.transport.assertConfigured();
    const comments: ForgeIssueComment[] = [];
    for (let page = 1; comments.length < max; page++) {
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
        }),
      );
      const batch = response!.data as RawIssueComment[];
      comments.push(...batch.map(toIssueComment));
      if (batch.length < 100) {
        return { comments: comments.slice(0, max), more: comments.length > max };
      }
    }
    return { comments: comments.slice(0, max), more: true };
  }

  async listIssuesUpdatedSince(
    owner: string,
    repo: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }> {
    this.transport.assertConfigured();
    const key = `issues:${owner}/${repo}:${since}:${page}`.toLowerCase();
    const cached = this.pages.get(key);
    const response = await this.transport.send('core', () =>
      this.transport.octokit.request('GET /repos/{owner}/{repo}/issues', {
        direction: 'asc',
        headers: cached ? { 'if-none-match': cached.etag } : {},
        owner,
        page,
        per_page: 100,
        repo,
        since,
        sort: 'updated',
        state: 'all',
      }),
    );
    if (response === null && cached) {
      return cached.value; // 304: unchanged, and not counted against the budget
    }
    const list = response!.data as RawIssue[];
    const value = {
      hasNext: /rel="next"/.test(String(response!.headers.link ?? '')),
      items: list.map(toIssue).filter((issue) => !issue.pullRequest),
      lastUpdatedAt: list.length > 0 ? (list[list.length - 1].updated_at ?? null) : null,
    };
    const etag = response!.headers.etag;
    if (typeof etag === 'string') {
      this.pages.delete(key);
      this.pages.set(key, { etag, value });
      if (this.pages.size > PAGE_CACHE_SIZE) {
        this.pages.delete(this.pages.keys().next().value!);
      }
    }
    return value;
  }

  async listIssueCommentsSince(
    owner: string,
    repo: string,
    number: number,
    since: string,
    max: number,
  ): Promise<ForgeIssueComment[]> {
    this.transport.assertConfigured();
    const comments: ForgeIssueComment[] = [];
    for (let page = 1; comments.length < max; page++) {
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
          since,
        }),
      );
      const batch = response!.data as RawIssueComment[];
      comments.push(...batch.map(toIssueComment));
      if (batch.length < 100) {
        break;
      }
    }
    return comments.slice(0, max);
  }

  async listRepositoryCommentsSince(
    owner: string,
    repo: string,
    since: string,
    max: number,
  ): Promise<{ comments: Array<ForgeIssueComment & { issueNumber: number; updatedAt: string }>; more: boolean }> {
    this.transport.assertConfigured();
    const comments = new Map<number, ForgeIssueComment & { issueNumber: number; updatedAt: string }>();
    // Pages move `since` forward (a comment edited meanwhile moves to the end of the order, and
    // counting pages would then skip the one after it), or, within one second, to the next page.
    let from = since;
    let page = 1;
    let more = false;
    for (let request = 0; request < Math.ceil(max / 100); request++) {
      const at = { from, page };
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/issues/comments', {
          direction: 'asc',
          owner,
          page: at.page,
          per_page: 100,
          repo,
          since: at.from,
          sort: 'updated',
        }),
      );
      const batch = response!.data as Array<RawIssueComment & { issue_url?: string; updated_at?: string }>;
      for (const raw of batch) {
        const issueNumber = Number(/\/issues\/(\d+)$/.exec(raw.issue_url ?? '')?.[1]);
        if (Number.isSafeInteger(issueNumber) && issueNumber > 0) {
          comments.set(raw.id, { ...toIssueComment(raw), issueNumber, updatedAt: raw.updated_at ?? raw.created_at });
        }
      }
      more = batch.length === 100;
      if (!more) {
        break;
      }
      const last = batch[batch.length - 1].updated_at ?? batch[batch.length - 1].created_at;
      page = last === from ? page + 1 : 1;
      from = last;
    }
    return {
      comments: [...comments.values()].sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.id - b.id),
      more,
    };
  }

  async lastLabeledBy(owner: string, repo: string, number: number, labels: readonly string[]): Promise<string | null> {
    this.transport.assertConfigured();
    const wanted = new Set(labels.map((label) => label.toLowerCase()));
    let labeler: string | null = null;
    for (let page = 1; page <= 3; page++) {
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/events', {
          issue_number: number,
          owner,
          page,
          per_page: 100,
          repo,
        }),
      );
      const events = response!.data as Array<{
        event?: string;
        actor?: { login?: string } | null;
        label?: { name?: string };
      }>;
      for (const event of events) {
        if (!wanted.has((event.label?.name ?? '').toLowerCase())) {
          continue;
        }
        if (event.event === 'labeled') {
          labeler = event.actor?.login ?? null;
        } else if (event.event === 'unlabeled') {
          labeler = null;
        }
      }
      if (events.length < 100) {
        break;
      }
    }
    return labeler;
  }

  async permissionOf(owner: string, repo: string, user: string): Promise<string> {
    this.transport.assertConfigured();
    try {
      const response = await this.transport.send('core', () =>
        this.transport.octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
          owner,
          repo,
          username: user,
        }),
      );
      return String((response!.data as { permission?: string }).permission ?? 'none');
    } catch (err) {
      if (err instanceof GitHubError && err.code === 'not_found') {
        return 'none'; // not a collaborator (GitHub answers 404 for a stranger)
      }
      throw err;
    }
  }

  async commentOnIssue(
    owner: string,
    repo: string,
    number: number,
    body: string,
  ): Promise<{ id: number; url: string }> {
    this.transport.assertConfigured();
    const response = await this.transport.send('core', () =>
      this.transport.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        body,
        issue_number: number,
        owner,
        repo,
        // Not re-sent on a 5xx or a lost answer: GitHub may have written it (the caller looks first).
        request: { retries: 0 },
      }),
    );
    const made = response!.data as RawIssueComment;
    return { id: made.id, url: made.html_url };
  }

  async closeIssue(owner: string, repo: string, number: number): Promise<void> {
    this.transport.assertConfigured();
    await this.transport.send('core', () =>
      this.transport.octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
        issue_number: number,
        owner,
        repo,
        state: 'closed',
        state_reason: 'completed',
      }),
    );
  }
}

/** An issue as GitHub's REST answers it (the fields an import reads). */
interface RawIssue {
  number: number;
  html_url: string;
  title: string;
  body?: string | null;
  labels?: Array<string | { name?: string | null }>;
  user?: { login?: string } | null;
  state: string;
  pull_request?: unknown;
  created_at: string;
  updated_at?: string;
  comments?: number;
  author_association?: string;
}

function toIssue(data: RawIssue): ForgeIssue {
  return {
    author: data.user?.login ?? null,
    authorAssociation: data.author_association ?? 'NONE',
    body: data.body ?? '',
    commentCount: typeof data.comments === 'number' ? data.comments : 0,
    createdAt: data.created_at,
    labels: (data.labels ?? [])
      .map((label) => (typeof label === 'string' ? label : (label.name ?? '')))
      .filter((name) => name !== ''),
    number: data.number,
    pullRequest: data.pull_request !== undefined && data.pull_request !== null,
    state: data.state === 'closed' ? 'closed' : 'open',
    title: data.title,
    updatedAt: data.updated_at ?? data.created_at,
    url: data.html_url,
  };
}

/** A comment as GitHub's REST answers it. */
interface RawIssueComment {
  id: number;
  body?: string | null;
  user?: { login?: string } | null;
  created_at: string;
  html_url: string;
}

function toIssueComment(c: RawIssueComment): ForgeIssueComment {
  return { author: c.user?.login ?? null, body: c.body ?? '', createdAt: c.created_at, id: c.id, url: c.html_url };
}
