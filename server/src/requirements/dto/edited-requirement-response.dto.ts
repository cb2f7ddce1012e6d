import { ApiProperty } from '@nestjs/swagger';

import { REQUIREMENT_WARNINGS, type RequirementWarning } from '@libs/contracts';

import { RequirementResponseDto } from './requirement-response.dto';

/** A created or edited Requirement, with what was accepted but looks wrong. */
export class EditedRequirementResponseDto extends RequirementResponseDto {
  /**
   * Accepted but flagged: `unknown_model` when the model catalog (GET /api/models) does not
   * list the model for the provider; `unsupported_reasoning_effort` when it lists the model
   * without that effort; `budget_clamped` (an agent's proposal) when the budget it asked for, or
   * none, was lowered to what its parent's tree has left; `no_commit_in_place` (on create) when
   * the workspace is a git repository without any commit, so the agent will work in place, in
   * the person's checkout, instead of a worktree of its own. Empty when nothing is flagged.
   */
  @ApiProperty({ enum: REQUIREMENT_WARNINGS, isArray: true }) warnings!: RequirementWarning[];
}
