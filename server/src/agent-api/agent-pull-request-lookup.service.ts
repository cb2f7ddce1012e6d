import { Inject, Injectable } from '@nestjs/common';

import { parsePullRequestUrl } from '../agent-tools/pull-request-lookup';
import { UsageError } from '../agent-tools/usage-error';
import { conflict, invalid, notFound, unavailable } from '../core/errors/domain-error';
import { GITHUB_CLIENT, type GitHubClient } from '../github/github-client';
import { GitHubError } from '../github/github.errors';
import type { PullRequestLookupResponseDto } from './dto/pull-request-lookup.dto';

/**
 * `pr register --url` fills a PR's fields from GitHub: asked here, with the manager's own GitHub
 * client, so that no agent needs the person's token in its environment (issue 45 §4).
 */
@Injectable()
export class AgentPullRequestLookup {
  constructor(@Inject(GITHUB_CLIENT) private readonly github: GitHubClient) {}

  async lookup(url: string): Promise<PullRequestLookupResponseDto> {
    let ref: ReturnType<typeof parsePullRequestUrl>;
    try {
      ref = parsePullRequestUrl(url, 'url');
    } catch (err) {
      throw invalid('invalid_pull_request_url', (err as UsageError).message);
    }
    const [owner, repo] = ref.repository.split('/') as [string, string];
    try {
      const pr = await this.github.getPullRequest(owner, repo, ref.number);
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
      if (err instanceof GitHubError && err.code === 'not_configured') {
        // The manager's state, not a failure: 409, and the caller gives every field instead.
        throw conflict(
          'github_not_configured',
          'Agent Manager has no GitHub token to look the pull request up with; pass every field instead',
        );
      }
      if (err instanceof GitHubError && (err.code === 'not_found' || err.code === 'forbidden')) {
        throw notFound('pull_request_not_found', `GitHub has no ${ref.repository}#${ref.number} this token can read`);
      }
      throw unavailable(
        'github_unavailable',
        `GitHub lookup of ${ref.repository}#${ref.number} failed: ${(err as Error).message}`,
      );
    }
  }
}
