import { Injectable } from '@nestjs/common';

import type { PullRequestStatus } from '@libs/contracts';
import { GITHUB_API_URL, createGitHubClient } from '../github/github-client';

import { UsageError } from './usage-error';

/** The fields `POST /api/agent/pull-requests` takes (besides the Requirement). */
export interface PullRequestFields {
  repository: string;
  number: number;
  url: string;
  title: string;
  baseBranch: string;
  headBranch: string;
  headSha: string;
  status: PullRequestStatus;
}

const PR_URL = /^https?:\/\/[^/]+\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)\/pull\/(\d+)(?:[/?#].*)?$/;

/** owner/name and number from a PR's web address (github.com or GitHub Enterprise). */
export function parsePullRequestUrl(
  url: string,
  name = '--url',
): Pick<PullRequestFields, 'repository' | 'number' | 'url'> {
  const match = PR_URL.exec(url.trim());
  if (!match) {
    throw new UsageError(
      `${name} must be a pull request address like https://github.com/org/repo/pull/184 (got ${url})`,
    );
  }
  const [, owner, repo, number] = match as unknown as [string, string, string, string];
  return { number: Number(number), repository: `${owner}/${repo}`, url: url.trim().replace(/[?#].*$/, '') };
}

/**
 * Fills a PR's fields from GitHub for `pr register --url`, when a token is available
 * (GITHUB_TOKEN, GH_TOKEN or `gh auth token`). The API root is `CODE_FACTORY_GITHUB_API_URL`
 * (GitHub Enterprise: https://host/api/v3), else api.github.com.
 */
@Injectable()
export class PullRequestLookup {
  /** True when the last lookup was skipped for want of a token. */
  lastLookupSkipped = false;

  /** GitHub's API root; unset, `CODE_FACTORY_GITHUB_API_URL` or api.github.com (the manager sets its own). */
  apiUrl: string | null = null;

  async find(ref: Pick<PullRequestFields, 'repository' | 'number'>): Promise<Partial<PullRequestFields>> {
    this.lastLookupSkipped = false;
    const client = await createGitHubClient({
      baseUrl: this.apiUrl ?? (process.env.CODE_FACTORY_GITHUB_API_URL?.trim() || GITHUB_API_URL),
      retries: 1,
      timeoutMs: 15_000,
    });
    if (!client.configured) {
      this.lastLookupSkipped = true;
      return {};
    }
    const [owner, repo] = ref.repository.split('/') as [string, string];
    try {
      const pr = await client.getPullRequest(owner, repo, ref.number);
      return {
        baseBranch: pr.baseBranch,
        headBranch: pr.headBranch,
        headSha: pr.headSha,
        number: pr.number,
        repository: pr.repository,
        status: pr.status,
        title: pr.title,
        url: pr.url,
      };
    } catch (err) {
      throw new UsageError(`GitHub lookup of ${ref.repository}#${ref.number} failed: ${(err as Error).message}`);
    }
  }
}
