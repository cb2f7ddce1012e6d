import type { Forge } from '@libs/contracts';

// Issues on a forge (issue 49): what an import, the issue picker, the write-back and the issue
// reconciler ask of GitHub or GitLab, with the repository as the forge names it (`owner/repo`,
// or GitLab's `group/subgroup/project`). Each forge's client implements IssueForge; intake reads
// it from the ForgeRegistry by the forge of the workspace remote (or the imported issue) at hand.

/** An issue as an import reads it. */
export interface ForgeIssue {
  number: number;
  url: string;
  title: string;
  body: string;
  labels: string[];
  author: string | null;
  state: 'open' | 'closed';
  pullRequest: boolean;
  createdAt: string;
  updatedAt: string;
  /** How many comments it has (what tells a new comment from a change within the same second). */
  commentCount: number;
  /** The author's relation to the repository (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE…). */
  authorAssociation: string;
}

export interface IssueQuery {
  state: 'open' | 'closed' | 'all';
  labels: string[];
  /** Words to search for (the forge's search); null: the plain list. */
  q: string | null;
  page: number;
  perPage: number;
}

export interface ForgeIssueComment {
  id: number;
  author: string | null;
  body: string;
  createdAt: string;
  /** When it was last edited, where the forge says (GitLab). */
  updatedAt?: string;
  url: string;
}

/** A comment of a repository's issue, as a repository-wide read answers it. */
export interface RepositoryComment extends ForgeIssueComment {
  issueNumber: number;
  updatedAt: string;
}

export interface IssueForge {
  readonly kind: Forge;
  /** False without a token: every call then fails with ForgeError `not_configured`. */
  readonly configured: boolean;
  /** One issue (a GitHub pull request answers too, with `pullRequest: true`). Throws ForgeError (`not_found`). */
  getIssue(repository: string, number: number): Promise<ForgeIssue>;
  /** An issue's comments, oldest first, at most `max`; `more`: there were others. Throws ForgeError. */
  listIssueComments(
    repository: string,
    number: number,
    max: number,
  ): Promise<{ comments: ForgeIssueComment[]; more: boolean }>;
  /** A page of a repository's issues (pull requests left out), newest first, matching `query`. Throws ForgeError. */
  listIssues(repository: string, query: IssueQuery): Promise<{ items: ForgeIssue[]; hasNext: boolean }>;
  /**
   * A page of the issues updated at or after `since` (the forge's time), the oldest change first
   * (`lastUpdatedAt`: the page's last change, where the next page starts). Throws ForgeError.
   */
  listIssuesUpdatedSince(
    repository: string,
    since: string,
    page: number,
  ): Promise<{ items: ForgeIssue[]; lastUpdatedAt: string | null; hasNext: boolean }>;
  /** An issue's comments written or edited at or after `since`, oldest first (at most `max`). Throws ForgeError. */
  listIssueCommentsSince(repository: string, number: number, since: string, max: number): Promise<ForgeIssueComment[]>;
  /**
   * The comments of the issues `numbers` (GitHub reads the whole repository's and picks theirs)
   * written or edited at or after `since`, oldest change first, each with its issue's number; what
   * is answered is complete up to its last one (`more`: the rest comes from there). Throws ForgeError.
   */
  listCommentsSince(
    repository: string,
    numbers: readonly number[],
    since: string,
    max: number,
  ): Promise<{ comments: RepositoryComment[]; more: boolean }>;
  /**
   * Who put the one of `labels` (case aside) the issue still has, and whether that label counts:
   * its labeler may triage the repository (GitHub: triage, write, maintain, admin; GitLab:
   * Reporter or above) and is no bot. `trustedCache` (one per look) keeps what was found per
   * login, so a look asks about each labeller once. Throws ForgeError.
   */
  intakeLabeler(
    repository: string,
    number: number,
    labels: readonly string[],
    trustedCache: Map<string, boolean>,
  ): Promise<{ login: string | null; trusted: boolean }>;
  /** Writes a comment on an issue, never re-sent by the client. Throws ForgeError. */
  commentOnIssue(repository: string, number: number, body: string): Promise<unknown>;
  /** Closes an issue (a closed one stays closed). Throws ForgeError. */
  closeIssue(repository: string, number: number): Promise<void>;
  /** The token's own login (asked once). Throws ForgeError. */
  login(): Promise<string>;
  /** The request budget as last reported (no request); null when not known yet. */
  budget(): { remaining: number; resetAt: string } | null;
}
