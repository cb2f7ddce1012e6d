import { Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { ChangesDiffQueryDto, ChangesRangeQueryDto, RequirementChangesResponseDto } from './dto/worktree.dto';
import { WorktreeChanges } from './worktree-changes.service';
import { WorktreesService } from './worktrees.service';

@ApiTags('requirements')
@Controller('requirements')
export class WorktreesController {
  constructor(
    private readonly changes: WorktreeChanges,
    private readonly requirements: RequirementsService,
    private readonly worktrees: WorktreesService,
  ) {}

  @Get(':id/changes')
  @ApiOperation({
    summary:
      "What the Requirement's agent changed: committed, uncommitted and untracked files against the merge base with its base ref (or from one checkpoint to another, or to now: what one run changed)",
  })
  @ApiOkResponse({ type: RequirementChangesResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement has no worktree (in place, not started yet, or removed)' })
  getRequirementChanges(
    @Param('id') id: string,
    @Query() query: ChangesRangeQueryDto,
  ): Promise<RequirementChangesResponseDto> {
    return this.changes.changes(id, query);
  }

  @Get(':id/changes/diff')
  @ApiOperation({
    summary: "One file's unified diff against the merge base (text/plain; cut at 2 MiB, then X-Diff-Truncated: true)",
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' } })
  @ApiBadRequestResponse({ description: 'The path is outside the worktree' })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement has no worktree' })
  async getRequirementChangeDiff(
    @Param('id') id: string,
    @Query() query: ChangesDiffQueryDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string> {
    const { diff, truncated } = await this.changes.diff(id, query.path, query.oldPath ?? null, query);
    res.type('text/plain; charset=utf-8').setHeader('X-Diff-Truncated', String(truncated));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    return diff;
  }

  @Post(':id/worktree/refresh')
  @HttpCode(200)
  @ApiOperation({
    summary: "Read the worktree's git state now (head, ahead/behind, dirty); the Requirement's event carries it",
  })
  @ApiOkResponse({ type: RequirementResponseDto })
  @ApiNotFoundResponse()
  async refreshRequirementWorktree(
    @Param('id') id: string,
    @Actor() actor: EventActor,
  ): Promise<RequirementResponseDto> {
    await this.requirements.get(id);
    await this.worktrees.refresh(id, actor);
    return this.requirements.get(id);
  }
}
