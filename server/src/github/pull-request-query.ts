// One GraphQL query reads a whole batch of pull requests: each PR is an aliased field
// (`pr0: repository(owner: $o0, name: $n0) { pullRequest(number: $p0) { ...PullRequestFields } }`)
// whose arguments travel as variables, so no user text is ever spliced into the query.
import type { PullRequestStatus } from '@libs/contracts';

import {
  CheckRun,
  CommitStatus,
  CommitStatusState,
  IssueComment,
  Mergeable,
  PullRequestFetchError,
  PullRequestRef,
  PullRequestResult,
  PullRequestSnapshot,
  PullRequestState,
  RestPullRequestFields,
  Review,
  ReviewThreadComment,
  SNAPSHOT_LIMITS,
} from '../forges/forge.types';

const AUTHORED = 'id databaseId author { login } authorAssociation body url';

export const PULL_REQUEST_FIELDS = `fragment PullRequestFields on PullRequest {
  number title url state isDraft mergeable headRefName headRefOid baseRefName updatedAt
  repository { nameWithOwner }
  comments(last: ${SNAPSHOT_LIMITS.comments}) { nodes { ${AUTHORED} createdAt } }
  reviews(last: ${SNAPSHOT_LIMITS.reviews}, states: [APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED]) { nodes { ${AUTHORED} state submittedAt } }
  reviewThreads(last: ${SNAPSHOT_LIMITS.reviewThreads}) { nodes { id comments(last: ${SNAPSHOT_LIMITS.reviewThreadComments}) { nodes { ${AUTHORED} path line createdAt } } } }
  commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: ${SNAPSHOT_LIMITS.checks}) { nodes {
    __typename
    ... on CheckRun { databaseId name status conclusion detailsUrl url }
    ... on StatusContext { context state description targetUrl }
  } } } } } }
}`;

export interface BatchQuery {
  query: string;
  variables: Record<string, string | number>;
}

/** Splits `owner/name`; null when the string is not of that shape. */
export function splitRepository(repository: string): { owner: string; name: string } | null {
  const match = /^([A-Za-z0-9-_.]+)\/([A-Za-z0-9-_.]+)$/.exec(repository);
  return match ? { name: match[2], owner: match[1] } : null;
}

/** The query and variables for `refs` (already validated by splitRepository); alias i is `pr<i>`. */
export function buildPullRequestsQuery(refs: readonly PullRequestRef[]): BatchQuery {
  return buildBatchQuery('PullRequests', 'PullRequestFields', PULL_REQUEST_FIELDS, refs);
}

/** One aliased `repository { pullRequest { ...fragment } }` field per ref, plus the rateLimit figures. */
export function buildBatchQuery(
  operation: string,
  fragmentName: string,
  fragment: string,
  refs: readonly PullRequestRef[],
): BatchQuery {
  const declarations: string[] = [];
  const fields: string[] = [];
  const variables: Record<string, string | number> = {};
  refs.forEach((ref, i) => {
    const { owner, name } = splitRepository(ref.repository)!;
    declarations.push(`$o${i}: String!, $n${i}: String!, $p${i}: Int!`);
    fields.push(
      `  pr${i}: repository(owner: $o${i}, name: $n${i}) { pullRequest(number: $p${i}) { ...${fragmentName} } }`,
    );
    variables[`o${i}`] = owner;
    variables[`n${i}`] = name;
    variables[`p${i}`] = ref.number;
  });
  const query = `query ${operation}(${declarations.join(', ')}) {
  rateLimit { cost limit remaining resetAt }
${fields.join('\n')}
}
${fragment}`;
  return { query, variables };
}

export interface GraphQlError {
  message: string;
  type?: string;
  path?: (string | number)[];
}

/**
 * One result per ref, in order. An alias with an error on its path (or no data) becomes a
 * PullRequestFetchError; the rest of the batch is unaffected.
 */
export function parsePullRequestsResponse(
  refs: readonly PullRequestRef[],
  data: Record<string, unknown> | null | undefined,
  errors: readonly GraphQlError[] = [],
): PullRequestResult[] {
  return parseBatchResponse(refs, data, errors, (ref, node: RawPullRequest) => toSnapshot(ref, node));
}

/** parsePullRequestsResponse for any fragment: `toResult` maps the `pullRequest` node of each alias that has one. */
export function parseBatchResponse<T, N>(
  refs: readonly PullRequestRef[],
  data: Record<string, unknown> | null | undefined,
  errors: readonly GraphQlError[],
  toResult: (ref: PullRequestRef, node: N) => T,
): (T | PullRequestFetchError)[] {
  return refs.map((ref, i) => {
    const alias = `pr${i}`;
    const error = errors.find((e) => e.path?.[0] === alias);
    const node = (data?.[alias] as { pullRequest?: N | null } | null | undefined)?.pullRequest;
    if (node) {
      return toResult(ref, node);
    }
    if (error) {
      return fetchError(
        ref,
        error.type === 'NOT_FOUND' ? 'not_found' : error.type === 'FORBIDDEN' ? 'forbidden' : 'failed',
        error.message,
      );
    }
    const unattributed = errors.find((e) => !e.path || e.path.length === 0);
    if (unattributed) {
      return fetchError(ref, 'failed', unattributed.message);
    }
    return fetchError(ref, 'not_found', `Could not resolve pull request ${ref.repository}#${ref.number}`);
  });
}

export function fetchError(
  ref: PullRequestRef,
  code: PullRequestFetchError['code'],
  message: string,
): PullRequestFetchError {
  return { code, kind: 'error', message, ref };
}

export function toStatus(state: PullRequestState, isDraft: boolean): PullRequestStatus {
  return state === 'open' ? (isDraft ? 'draft' : 'open') : state;
}

interface RawAuthored {
  id: string;
  databaseId: number | null;
  author: { login: string } | null;
  authorAssociation: string;
  body: string;
  url: string;
}
interface RawPullRequest {
  number: number;
  title: string;
  url: string;
  state: 'OPEN' | 'CLOSED' | 'MERGED';
  isDraft: boolean;
  mergeable: Mergeable;
  headRefName: string;
  headRefOid: string;
  baseRefName: string;
  updatedAt: string;
  repository: { nameWithOwner: string };
  comments: { nodes: (RawAuthored & { createdAt: string })[] };
  reviews: { nodes: (RawAuthored & { state: Review['state']; submittedAt: string | null })[] };
  reviewThreads: {
    nodes: {
      id: string;
      comments: { nodes: (RawAuthored & { path: string; line: number | null; createdAt: string })[] };
    }[];
  };
  commits: { nodes: { commit: { oid: string; statusCheckRollup: RawRollup | null } }[] };
}
interface RawRollup {
  state: CommitStatusState;
  contexts: { nodes: RawContext[] };
}
type RawContext =
  | {
      __typename: 'CheckRun';
      databaseId: number | null;
      name: string;
      status: CheckRun['status'];
      conclusion: CheckRun['conclusion'];
      detailsUrl: string | null;
      url: string;
    }
  | {
      __typename: 'StatusContext';
      context: string;
      state: CommitStatusState;
      description: string | null;
      targetUrl: string | null;
    };

function authored(raw: RawAuthored) {
  return {
    author: raw.author?.login ?? null,
    authorAssociation: raw.authorAssociation,
    body: raw.body,
    databaseId: raw.databaseId,
    id: raw.id,
    url: raw.url,
  };
}

function toSnapshot(ref: PullRequestRef, raw: RawPullRequest): PullRequestSnapshot {
  const state = raw.state.toLowerCase() as PullRequestState;
  const rollup = raw.commits.nodes[0]?.commit.statusCheckRollup ?? null;
  const contexts = rollup?.contexts.nodes ?? [];
  return {
    baseBranch: raw.baseRefName,
    checkRuns: contexts.flatMap((c): CheckRun[] =>
      c.__typename === 'CheckRun'
        ? [{ conclusion: c.conclusion, id: c.databaseId, name: c.name, status: c.status, url: c.detailsUrl ?? c.url }]
        : [],
    ),
    checksState: rollup?.state ?? null,
    comments: raw.comments.nodes.map((c): IssueComment => ({ ...authored(c), createdAt: c.createdAt })),
    headBranch: raw.headRefName,
    headSha: raw.headRefOid,
    isDraft: raw.isDraft,
    kind: 'snapshot',
    mergeable: raw.mergeable,
    number: raw.number,
    ref,
    repository: raw.repository.nameWithOwner,
    reviewComments: raw.reviewThreads.nodes.flatMap((thread) =>
      thread.comments.nodes.map((c): ReviewThreadComment => ({
        ...authored(c),
        createdAt: c.createdAt,
        line: c.line,
        path: c.path,
        threadId: thread.id,
      })),
    ),
    reviews: raw.reviews.nodes.map((r): Review => ({ ...authored(r), state: r.state, submittedAt: r.submittedAt })),
    state,
    status: toStatus(state, raw.isDraft),
    statuses: contexts.flatMap((c): CommitStatus[] =>
      c.__typename === 'StatusContext'
        ? [{ context: c.context, description: c.description, state: c.state, url: c.targetUrl }]
        : [],
    ),
    title: raw.title,
    updatedAt: raw.updatedAt,
    url: raw.url,
  };
}

/** The fields of GitHub's REST pull request this manager reads. */
export interface RestPullRequest {
  number: number;
  state: string;
  merged?: boolean | null;
  draft?: boolean | null;
  mergeable?: boolean | null;
  mergeable_state?: string | null;
  title: string;
  updated_at: string;
  html_url: string;
  base: { ref: string; repo?: { full_name: string } | null };
  head: { ref: string; sha: string };
}

/** The REST answer of `GET /repos/{owner}/{repo}/pulls/{number}` in the manager's terms. */
export function toRestFields(data: RestPullRequest): RestPullRequestFields {
  const state = data.merged ? 'merged' : data.state === 'closed' ? 'closed' : 'open';
  return {
    baseBranch: data.base.ref,
    headBranch: data.head.ref,
    headSha: data.head.sha,
    isDraft: !!data.draft,
    mergeable: data.mergeable ?? null,
    mergeableState: data.mergeable_state ?? 'unknown',
    number: data.number,
    repository: data.base.repo?.full_name ?? '',
    state,
    status: toStatus(state, !!data.draft),
    title: data.title,
    updatedAt: data.updated_at,
    url: data.html_url,
  };
}
