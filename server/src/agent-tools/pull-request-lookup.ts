import type { PullRequestStatus } from '@libs/contracts';

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
