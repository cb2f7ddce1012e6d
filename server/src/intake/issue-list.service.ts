import { Inject, Injectable } from '@nestjs/common';

import { conflict } from '../core/errors/domain-error';
import { GITHUB_CLIENT, type GitHubClient, type IssueQuery } from '../github/github-client';
import { RequirementsService } from '../requirements/requirements.service';
import type { ForgeIssuePageDto, ListForgeIssuesQueryDto } from './dto/forge-issues.dto';
import { fromGitHubError, issueKey } from './issue-import.service';
import { WorkspaceRemotes } from './workspace-remotes';

/** Issues per page. */
const PAGE_SIZE = 30;
/** A page is asked of GitHub again after this (a picker opened, searched and scrolled costs a few requests). */
const CACHE_MS = 30_000;
const CACHE_MAX = 100;

/**
 * The issues a person picks from (issue 49 §2): a page of one of the workspace's repositories'
 * issues, the same page asked again within 30 s answered from memory (GitHub's budget is shared
 * with the reconciler), each saying whether it was imported already (read fresh every time).
 */
@Injectable()
export class IssueList {
  private readonly cache = new Map<
    string,
    { at: number; page: Promise<{ items: GitHubIssueView[]; hasNext: boolean }> }
  >();

  constructor(
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    private readonly remotes: WorkspaceRemotes,
    private readonly requirements: RequirementsService,
  ) {}

  async list(query: ListForgeIssuesQueryDto): Promise<ForgeIssuePageDto> {
    const wanted = query.repository === undefined ? null : query.repository.split('/');
    const remote = await this.remotes.find(wanted === null ? null : { host: null, owner: wanted[0], repo: wanted[1] });
    if (!this.github.configured) {
      throw conflict(
        'github_token_missing',
        'Agent Manager has no GitHub token to read issues with: set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`, then restart it',
      );
    }
    const labels = (query.labels ?? '')
      .split(',')
      .map((label) => label.trim())
      .filter((label) => label !== '');
    const page = Number(query.cursor ?? '1');
    const issueQuery: IssueQuery = {
      labels,
      page,
      perPage: PAGE_SIZE,
      q: query.q?.trim() || null,
      state: query.state ?? 'open',
    };
    const key = JSON.stringify([remote.owner, remote.repo, issueQuery]).toLowerCase();
    const fetched = await this.cached(key, () => this.github.listIssues(remote.owner, remote.repo, issueQuery)).catch(
      (err: unknown) => {
        throw fromGitHubError(err, `the issues of ${remote.owner}/${remote.repo}`);
      },
    );
    const imported = await this.requirements.importedAsMany(
      fetched.items.map((issue) => issueKey(remote.owner, remote.repo, issue.number)),
    );
    return {
      items: fetched.items.map((issue) => ({
        author: issue.author,
        createdAt: issue.createdAt,
        importedAs: imported.get(issueKey(remote.owner, remote.repo, issue.number)) ?? null,
        labels: issue.labels,
        number: issue.number,
        state: issue.state,
        title: issue.title,
        url: issue.url,
      })),
      nextCursor: fetched.hasNext && page < 9999 ? String(page + 1) : null,
      repository: `${remote.owner}/${remote.repo}`,
    };
  }

  private cached(
    key: string,
    load: () => Promise<{ items: GitHubIssueView[]; hasNext: boolean }>,
  ): Promise<{ items: GitHubIssueView[]; hasNext: boolean }> {
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit !== undefined && now - hit.at < CACHE_MS) {
      return hit.page;
    }
    const page = load();
    this.cache.set(key, { at: now, page });
    // A failure is not remembered: the next ask tries again.
    page.catch(() => this.cache.delete(key));
    while (this.cache.size > CACHE_MAX) {
      this.cache.delete(this.cache.keys().next().value!);
    }
    return page;
  }
}

type GitHubIssueView = Awaited<ReturnType<GitHubClient['listIssues']>>['items'][number];
