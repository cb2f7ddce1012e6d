import { Injectable } from '@nestjs/common';

import type { AgentScope } from '../auth/run-credentials.service';
import { forbidden } from '../core/errors/domain-error';
import { ConflictRadar } from '../landing/conflict-radar.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import { AgentLandingResponseDto } from './dto/agent-requirements.dto';

/** Files named in the summary (all of them are in `landing`). */
const NAMED = 5;
const names = (paths: string[]) =>
  paths.slice(0, NAMED).join(', ') + (paths.length > NAMED ? ` and ${paths.length - NAMED} more` : '');

/**
 * The conflict radar as an agent sees it (issue 28 §5): its own Requirement's answer, with what
 * to do, so that it can rebase before a person or the merge queue asks it to. A run credential
 * reads only its own Requirement's; the owner has the whole radar at GET /api/conflicts.
 */
@Injectable()
export class AgentLandingService {
  constructor(
    private readonly radar: ConflictRadar,
    private readonly requirements: RequirementsService,
    private readonly worktrees: WorktreesService,
  ) {}

  async landing(requirementId: string, scope: AgentScope): Promise<AgentLandingResponseDto> {
    if (requirementId !== scope.requirementId) {
      throw forbidden(
        'outside_run_scope',
        `this run acts for Requirement ${scope.requirementId}, not ${requirementId}`,
      );
    }
    // What the agent just committed is imported first (its repository is its own: the radar reads
    // the person's), then a pass that starts now sees it (passes never overlap, so asking often
    // costs at most one more pass). An import its repository refuses leaves the last one.
    await this.worktrees.importWork(requirementId).catch(() => undefined);
    await this.radar.refresh();
    const requirement = await this.requirements.get(requirementId);
    return {
      baseRef: requirement.baseRef,
      branch: requirement.worktree?.branch ?? null,
      isolation: requirement.isolation,
      landing: requirement.landing,
      requirementId,
      summary: summarize(requirement),
      title: requirement.title,
    };
  }
}

/** The radar's answer in one paragraph, addressed to the agent. */
export function summarize(requirement: RequirementResponseDto): string {
  const { landing } = requirement;
  const base = requirement.baseRef;
  const branch = requirement.worktree?.branch ?? null;
  if (requirement.isolation !== 'worktree' || base === null) {
    return "This Requirement works in place, in the person's checkout: it has no branch of its own to land, and the conflict radar does not look at it.";
  }
  if (landing.landedAt !== null) {
    return `Landed on ${base} (${landing.landedMethod}) at ${landing.landedAt}: ${base} holds it in ${landing.landedCommit?.slice(0, 12)}.`;
  }
  if (branch === null) {
    return `No branch yet: the first run makes one from ${base}.`;
  }
  if (landing.mergesCleanly === null) {
    return `Not checked: ${branch} has no commits or changes beyond ${base} yet, or the radar has not looked at them.`;
  }
  const behind = landing.behindBy
    ? ` ${base} has ${landing.behindBy} commit${landing.behindBy === 1 ? '' : 's'} your branch lacks.`
    : '';
  const parts = [
    landing.mergesCleanly
      ? `${branch} merges cleanly onto ${base}.${behind}`
      : `${branch} conflicts with ${base} in ${names(landing.conflictPaths)}.${behind} Rebase onto ${base} now (\`git rebase ${base}\` in your worktree), resolve those files and commit, so it lands cleanly.`,
  ];
  if (landing.conflictsWith.length > 0) {
    const others = landing.conflictsWith
      .map((other) => `"${other.title}" (${other.requirementId}) in ${names(other.paths)}`)
      .join('; ');
    parts.push(
      `It also conflicts with other live work: ${others}. Whichever lands second must rebase onto the new ${base}: keep your changes to those files small, or rebase once the other has landed.`,
    );
  }
  return parts.join(' ');
}
