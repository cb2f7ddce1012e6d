import type { Forge, PullRequestStatus } from '@libs/contracts';

import { UsageError } from './usage-error';

/** The fields `POST /api/agent/pull-requests` takes (besides the Requirement). */
export interface PullRequestFields {
  /** github (default) or gitlab: a merge request. */
  forge?: Forge;
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
/** GitLab: the project's full path (groups nest), then `/-/merge_requests/<iid>`. */
const MR_URL = /^https?:\/\/[^/]+\/((?:[A-Za-z0-9_.-]+\/){1,20}[A-Za-z0-9_.-]+)\/-\/merge_requests\/(\d+)(?:[/?#].*)?$/;

/**
 * The forge, repository and number from a request's web address: a GitHub pull request
 * (github.com or GitHub Enterprise, `…/org/repo/pull/184`) or a GitLab merge request (gitlab.com or
 * self-hosted, `…/group/project/-/merge_requests/12`).
 */
export function parsePullRequestUrl(
  url: string,
  name = '--url',
): Required<Pick<PullRequestFields, 'forge' | 'repository' | 'number' | 'url'>> {
  const value = url.trim();
  const clean = value.replace(/[?#].*$/, '');
  const mr = MR_URL.exec(value);
  if (mr) {
    return { forge: 'gitlab', number: Number(mr[2]), repository: mr[1], url: clean };
  }
  const match = PR_URL.exec(value);
  if (!match) {
    throw new UsageError(
      `${name} must be a pull request address like https://github.com/org/repo/pull/184 or a merge request address like https://gitlab.com/group/project/-/merge_requests/12 (got ${url})`,
    );
  }
  const [, owner, repo, number] = match as unknown as [string, string, string, string];
  return { forge: 'github', number: Number(number), repository: `${owner}/${repo}`, url: clean };
}
