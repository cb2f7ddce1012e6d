// The parts of GitLab's REST API v4 answers the client reads (docs.gitlab.com/api/merge_requests,
// /api/discussions, /api/jobs). Every field is optional where GitLab documents it may be absent.

export interface GitLabUser {
  id: number;
  username: string;
  /** Only on `GET /users/:id`: a bot account (project, group or service bots). */
  bot?: boolean;
}

export interface GitLabIssue {
  iid: number;
  title: string;
  description?: string | null;
  /** opened, closed */
  state: string;
  labels?: string[];
  author: GitLabUser | null;
  web_url: string;
  created_at: string;
  updated_at: string;
  user_notes_count?: number;
}

/** docs.gitlab.com/api/resource_label_events */
export interface GitLabLabelEvent {
  id: number;
  user: GitLabUser | null;
  created_at: string;
  label: { id: number; name: string } | null;
  action: 'add' | 'remove';
}

export interface GitLabMember {
  id: number;
  username: string;
  /** 10 Guest, 15 Planner, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner */
  access_level: number;
}

export interface GitLabPipeline {
  id: number;
  sha: string;
  ref?: string;
  /** created, waiting_for_resource, preparing, pending, running, success, failed, canceled, skipped, manual, scheduled */
  status: string;
  web_url?: string;
}

export interface GitLabMergeRequest {
  id: number;
  iid: number;
  title: string;
  description?: string | null;
  /** opened, closed, locked, merged */
  state: string;
  draft?: boolean;
  /** The older name of `draft`, still sent. */
  work_in_progress?: boolean;
  source_branch: string;
  target_branch: string;
  /** The head commit; null on an MR whose source branch is gone. */
  sha: string | null;
  web_url: string;
  updated_at: string;
  has_conflicts?: boolean;
  /** mergeable, conflict, checking, unchecked, ci_must_pass, draft_status, not_open, … */
  detailed_merge_status?: string;
  /** The older mergeability field: can_be_merged, cannot_be_merged, checking, unchecked. */
  merge_status?: string;
  user_notes_count?: number;
  /** Only on the single-MR endpoint. */
  head_pipeline?: GitLabPipeline | null;
}

export interface GitLabNote {
  id: number;
  body: string | null;
  author: GitLabUser | null;
  created_at: string;
  updated_at?: string;
  system: boolean;
  /** null (a plain comment), DiscussionNote (in a thread) or DiffNote (on a line of the diff). */
  type?: string | null;
  position?: {
    new_path?: string | null;
    new_line?: number | null;
    old_path?: string | null;
    old_line?: number | null;
  } | null;
}

export interface GitLabDiscussion {
  id: string;
  individual_note: boolean;
  notes?: GitLabNote[];
}

export interface GitLabJob {
  id: number;
  name: string;
  status: string;
  web_url: string;
  allow_failure?: boolean;
}
