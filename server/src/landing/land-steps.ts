import type { LandMethod } from '@libs/contracts';

import { DomainError, conflict, invalid } from '../core/errors/domain-error';
import type { MessagesService } from '../messages/messages.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import type { WorktreesService } from '../worktrees/worktrees.service';
import { changedPaths } from './landing-git';

// What every land method shares, local or pull request: the same refusals in the same words, the
// same commit of pending work, the same summary of the conversation.

/** Files named in a refusal's message (all of them are in `details`). */
const NAMED = 10;

export const listed = (files: string[]) =>
  files.slice(0, NAMED).join(', ') + (files.length > NAMED ? ` and ${files.length - NAMED} more` : '');

/** Refusals that need no git: what cannot have a branch to land, or is being worked on. */
export function refuseUnlandable(requirement: RequirementResponseDto): void {
  if (requirement.status === 'cancelled') {
    throw conflict('requirement_cancelled', `"${requirement.title}" is cancelled: its work is not landed`);
  }
  if (requirement.isolation !== 'worktree' || requirement.baseRef === null) {
    throw conflict(
      'not_landable',
      `"${requirement.title}" works in place, in your checkout: its changes are already there, commit them yourself`,
    );
  }
  if (requirement.worktree?.branch == null) {
    throw conflict('nothing_to_land', `"${requirement.title}" has no branch yet: its first run makes one`);
  }
  if (requirement.session.state === 'running') {
    throw conflict(
      'run_active',
      `"${requirement.title}" has a run in progress: stop it or wait for it to end, then land`,
    );
  }
}

/** A person's commit message goes only with a merge or squash, and says something (400 otherwise). */
export function refuseMessage(method: LandMethod, message: string | undefined): void {
  if (message === undefined) {
    return;
  }
  if (method !== 'merge' && method !== 'squash') {
    throw invalid(
      'message_not_applicable',
      `a ${method === 'rebase' ? 'rebase keeps each commit with its own message' : 'pull request takes its title and body from the Requirement'}: a message goes with merge or squash`,
    );
  }
  if (message.trim() === '') {
    throw invalid('empty_message', 'the commit message is empty: write one, or leave it out for the default');
  }
}

/** What a land with `expectedHead` refuses when the work is no longer what the person was shown. */
export function headMoved(requirement: RequirementResponseDto, shown: string, now: string | null): DomainError {
  return conflict(
    'head_moved',
    `"${requirement.title}" changed since you looked at it (you were shown ${shown.slice(0, 12)}, its work is now ${now === null ? 'gone' : now.slice(0, 12)}): look at its changes again, then land`,
    now === null ? [] : [now],
  );
}

/**
 * What a land or a pull request takes (issue 44 §3; the caller holds the Requirement, no run is
 * active): the agent's work imported now into the person's repository. Refused with head_moved
 * when it is not the work the person was shown (`expectedHead`), with import_refused when the
 * agent's repository could not be imported, with worktree_dirty (naming the files) when work is
 * left uncommitted and `commitPending` is not asked — with it, the snapshot of that work, which
 * is what Changes showed, becomes the branch's commit first. Returns the branch's head to land.
 */
export async function takeWork(
  worktrees: WorktreesService,
  requirement: RequirementResponseDto,
  options: { commitPending?: boolean; expectedHead?: string },
): Promise<string> {
  const imported = await worktrees.importWork(requirement.id);
  if (imported.error !== null) {
    throw conflict(
      'import_refused',
      `the work of "${requirement.title}" could not be imported from its agent's repository: ${imported.error}`,
    );
  }
  if (imported.head === null) {
    throw conflict(
      'nothing_to_land',
      `the branch ${requirement.worktree?.branch ?? ''} of "${requirement.title}" no longer exists`,
    );
  }
  const shown = imported.work ?? imported.head;
  if (options.expectedHead !== undefined && options.expectedHead !== shown) {
    throw headMoved(requirement, options.expectedHead, shown);
  }
  if (!imported.dirty || imported.work === null) {
    return imported.head;
  }
  if (!options.commitPending) {
    const top = (await worktrees.personTop()) as string;
    const uncommitted = await changedPaths(top, imported.head, imported.work);
    throw conflict(
      'worktree_dirty',
      `"${requirement.title}" has uncommitted work in its worktree (${listed(uncommitted)}): ask its agent to commit it, or land with commitPending to commit it first`,
      uncommitted,
    );
  }
  return worktrees.commitPending(requirement.id, imported);
}

/** The longest summary taken from the conversation (a squashed commit's body, a PR's). */
const SUMMARY_MAX = 4000;

/** Terminal escapes (colours, cursor moves) and the control characters a commit message must not carry. */
const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-_]/g;
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * What the agent said last, as a summary of the Requirement's conversation ('' when it said
 * nothing): as plain text — its colour codes and control characters gone, its line ends `\n` —
 * since it becomes a commit message the person may land as it is.
 */
export async function agentSummary(messages: MessagesService, requirementId: string): Promise<string> {
  const last = await messages.latestOf(requirementId, 'rd_agent');
  const text = (last?.body ?? '').replace(/\r\n?/g, '\n').replace(ESCAPES, '').replace(CONTROLS, '').trim();
  return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX)}…` : text;
}
