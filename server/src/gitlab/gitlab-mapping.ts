// What GitLab's REST answers mean in the forges' common shapes (issue 49 §5): an issue, a merge
// request's state, draft, mergeability and pipeline, its notes and discussion threads.
import type { PullRequestStatus } from '@libs/contracts';

import type {
  IssueComment,
  Mergeable,
  PullRequestRef,
  PullRequestSnapshot,
  PullRequestSummary,
  RestPullRequestFields,
  ReviewThreadComment,
} from '../forges/forge.types';
import type { ForgeIssue } from '../forges/forge-issues';
import type { GitLabDiscussion, GitLabIssue, GitLabMergeRequest, GitLabNote } from './gitlab.types';

export function issueOf(issue: GitLabIssue): ForgeIssue {
  return {
    author: issue.author?.username ?? null,
    authorAssociation: 'NONE',
    body: issue.description ?? '',
    commentCount: issue.user_notes_count ?? 0,
    createdAt: issue.created_at,
    labels: issue.labels ?? [],
    number: issue.iid,
    pullRequest: false,
    state: issue.state === 'opened' ? 'open' : 'closed',
    title: issue.title,
    updatedAt: issue.updated_at,
    url: issue.web_url,
  };
}

export function statusOf(mr: GitLabMergeRequest): {
  state: PullRequestSnapshot['state'];
  status: PullRequestStatus;
  isDraft: boolean;
} {
  const isDraft = mr.draft === true || mr.work_in_progress === true;
  // `locked` is an MR being merged right now: still open until GitLab says merged.
  const state = mr.state === 'merged' ? 'merged' : mr.state === 'opened' || mr.state === 'locked' ? 'open' : 'closed';
  return { isDraft, state, status: state === 'open' ? (isDraft ? 'draft' : 'open') : state };
}

/** GitLab computes mergeability after a push: `checking`/`unchecked` until it knows. */
export function mergeableOf(mr: GitLabMergeRequest): Mergeable {
  // Before GitLab 15.6 there is no detailed status: `cannot_be_merged` then means conflicts.
  if (
    mr.has_conflicts === true ||
    mr.detailed_merge_status === 'conflict' ||
    (mr.detailed_merge_status === undefined && mr.merge_status === 'cannot_be_merged')
  ) {
    return 'CONFLICTING';
  }
  const status = mr.detailed_merge_status ?? mr.merge_status ?? '';
  return ['checking', 'unchecked', 'cannot_be_merged_recheck', 'preparing', 'approvals_syncing'].includes(status)
    ? 'UNKNOWN'
    : 'MERGEABLE';
}

export function pipelineState(status: string | null): PullRequestSnapshot['checksState'] {
  switch (status) {
    case null:
      return null;
    case 'success':
      return 'SUCCESS';
    case 'failed':
      return 'FAILURE';
    case 'canceled':
      return 'ERROR';
    default:
      return 'PENDING';
  }
}

export function summaryOf(ref: PullRequestRef, mr: GitLabMergeRequest): PullRequestSummary {
  const { isDraft, state, status } = statusOf(mr);
  const mergeable = mergeableOf(mr);
  const pipeline = mr.head_pipeline ?? null;
  return {
    fingerprint: JSON.stringify([
      state,
      isDraft,
      mr.sha,
      mergeable,
      mr.user_notes_count ?? null,
      mr.updated_at,
      pipeline ? [pipeline.id, pipeline.sha, pipeline.status] : null,
    ]),
    headSha: mr.sha ?? '',
    isDraft,
    kind: 'summary',
    mergeable,
    number: mr.iid,
    ref,
    repository: ref.repository,
    state,
    status,
    updatedAt: mr.updated_at,
  };
}

export function restFieldsOf(repository: string, mr: GitLabMergeRequest): RestPullRequestFields {
  const { isDraft, state, status } = statusOf(mr);
  return {
    baseBranch: mr.target_branch,
    headBranch: mr.source_branch,
    headSha: mr.sha ?? '',
    isDraft,
    mergeable: mergeableOf(mr) === 'UNKNOWN' ? null : mergeableOf(mr) === 'MERGEABLE',
    mergeableState: mr.detailed_merge_status ?? mr.merge_status ?? 'unknown',
    number: mr.iid,
    repository,
    state,
    status,
    title: mr.title,
    updatedAt: mr.updated_at,
    url: mr.web_url,
  };
}

export function commentOf(mr: GitLabMergeRequest, note: GitLabNote): IssueComment {
  return {
    author: note.author?.username ?? null,
    authorAssociation: 'NONE',
    body: note.body ?? '',
    createdAt: note.created_at,
    databaseId: note.id,
    id: String(note.id),
    url: `${mr.web_url}#note_${note.id}`,
  };
}

export function threadNoteOf(
  mr: GitLabMergeRequest,
  discussion: GitLabDiscussion,
  note: GitLabNote,
  anchor: GitLabNote['position'] | null,
): ReviewThreadComment {
  const position = note.position ?? anchor;
  return {
    ...commentOf(mr, note),
    line: position?.new_line ?? position?.old_line ?? null,
    path: position?.new_path ?? position?.old_path ?? '(discussion)',
    threadId: discussion.id,
  };
}
