import { Injectable } from '@nestjs/common';

import type { ForgeIssue, IssueQuery } from '../forges/forge-issues';
import { ForgeRegistry } from '../forges/pull-request-forge';
import { RequirementsService } from '../requirements/requirements.service';
import type { ForgeIssuePageDto, ListForgeIssuesQueryDto } from './dto/forge-issues.dto';
import { fromForgeError, issueForge, issueKey } from './issue-import.service';
import { WorkspaceRemotes } from './workspace-remotes';

/** Issues per page. */
const PAGE_SIZE = 30;
/** A page is asked of the forge again after this (a picker opened, searched and scrolled costs a few requests). */
const CACHE_MS = 30_000;
const CACHE_MAX = 100;

/**
 * The issues a person picks from (issue 49 §2): a page of one of the workspace's repositories'
 * issues, the same page asked again within 30 s answered from memory (the forge's budget is shared
 * with the reconciler), each saying whether it was imported already (read fresh every time).
 */
@Injectable()
export class IssueList {
  private readonly cache = new Map<string, { at: number; page: Promise<{ items: ForgeIssue[]; hasNext: boolean }> }>();

  constructor(
    private readonly forges: ForgeRegistry,
    private readonly remotes: WorkspaceRemotes,
    private readonly requirements: RequirementsService,
  ) {}

  async list(query: ListForgeIssuesQueryDto): Promise<ForgeIssuePageDto> {
    const remote = await this.remotes.find(
      query.repository === undefined ? null : { forge: query.forge, host: null, repository: query.repository },
    );
    const forge = issueForge(this.forges, remote.forge);
    const repository = `${remote.owner}/${remote.repo}`;
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
    const key = JSON.stringify([remote.forge, repository, issueQuery]).toLowerCase();
    const fetched = await this.cached(key, () => forge.listIssues(repository, issueQuery)).catch((err: unknown) => {
      throw fromForgeError(remote.forge, err, `the issues of ${repository}`);
    });
    const imported = await this.requirements.importedAsMany(
      fetched.items.map((issue) => issueKey(remote.forge, repository, issue.number)),
    );
    return {
      items: fetched.items.map((issue) => ({
        author: issue.author,
        createdAt: issue.createdAt,
        importedAs: imported.get(issueKey(remote.forge, repository, issue.number)) ?? null,
        labels: issue.labels,
        number: issue.number,
        state: issue.state,
        title: issue.title,
        url: issue.url,
      })),
      nextCursor: fetched.hasNext && page < 9999 ? String(page + 1) : null,
      forge: remote.forge,
      repository,
    };
  }

  private cached(
    key: string,
    load: () => Promise<{ items: ForgeIssue[]; hasNext: boolean }>,
  ): Promise<{ items: ForgeIssue[]; hasNext: boolean }> {
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
