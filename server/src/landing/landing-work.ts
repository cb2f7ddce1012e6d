import { conflict } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import type { MessagesService } from '../messages/messages.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { commitIdentity, uncommittedFiles } from './landing-git';

// What every land method shares, local or pull request: the same refusals in the same words, the
// same commit of pending work, the same summary of the conversation.

/** Files named in a refusal's message (all of them are in `details`). */
const NAMED = 10;

export const listed = (files: string[]) => files.slice(0, NAMED).join(', ') + (files.length > NAMED ? ` and ${files.length - NAMED} more` : '');

/** Refusals that need no git: what cannot have a branch to land, or is being worked on. */
export function refuseUnlandable(requirement: RequirementResponseDto): void {
  if (requirement.status === 'cancelled') {
    throw conflict('requirement_cancelled', `"${requirement.title}" is cancelled: its work is not landed`);
  }
  if (requirement.isolation !== 'worktree' || requirement.baseRef === null) {
    throw conflict('not_landable', `"${requirement.title}" works in place, in your checkout: its changes are already there, commit them yourself`);
  }
  if (requirement.worktree?.branch == null) {
    throw conflict('nothing_to_land', `"${requirement.title}" has no branch yet: its first run makes one`);
  }
  if (requirement.session.state === 'running') {
    throw conflict('run_active', `"${requirement.title}" has a run in progress: stop it or wait for it to end, then land`);
  }
}

/**
 * Uncommitted work in the Requirement's worktree (untracked files included): refused with
 * `worktree_dirty`, naming the files, or — with `commitPending` — committed on its branch first.
 * The caller holds the worktree (no run can start meanwhile). Returns whether it committed.
 */
export async function commitPendingWork(requirement: RequirementResponseDto, commitPending: boolean | undefined): Promise<boolean> {
  const worktree = requirement.worktree?.path ?? null;
  if (worktree === null) {
    return false;
  }
  const uncommitted = await uncommittedFiles(worktree, true);
  if (uncommitted.length === 0) {
    return false;
  }
  if (!commitPending) {
    throw conflict(
      'worktree_dirty',
      `"${requirement.title}" has uncommitted work in its worktree (${listed(uncommitted)}): ask its agent to commit it, or land with commitPending to commit it first`,
      uncommitted,
    );
  }
  await git(['add', '-A', '--', '.'], { cwd: worktree, timeoutMs: 5 * 60_000 });
  await git(['commit', '-q', '--no-verify', '-m', `Uncommitted work of "${requirement.title}"\n\nCommitted by Agent Manager before landing (Requirement ${requirement.id}).`], {
    cwd: worktree,
    env: await commitIdentity(worktree),
    timeoutMs: 5 * 60_000,
  });
  return true;
}

/** The longest summary taken from the conversation (a squashed commit's body, a PR's). */
const SUMMARY_MAX = 4000;

/** What the agent said last, as a summary of the Requirement's conversation ('' when it said nothing). */
export async function agentSummary(messages: MessagesService, requirementId: string): Promise<string> {
  const last = await messages.latestOf(requirementId, 'rd_agent');
  const text = (last?.body ?? '').trim();
  return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX)}…` : text;
}
