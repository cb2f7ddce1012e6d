import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { WorkspaceGitResponseDto, WorktreePoolResponseDto } from './dto/workspace.dto';
import { WorkspaceGit } from './workspace-git.service';
import { WorktreePool } from './worktree-pool.service';

@ApiTags('manager')
@Controller('workspace')
export class WorkspaceController {
  constructor(
    private readonly pool: WorktreePool,
    private readonly workspace: WorkspaceGit,
  ) {}

  @Get('git')
  @ApiOperation({
    summary:
      'What the workspace is to git now: with a commit, without one (agents then work in place), or no repository',
  })
  @ApiOkResponse({ type: WorkspaceGitResponseDto })
  async getWorkspaceGit(): Promise<WorkspaceGitResponseDto> {
    return { commit: null, state: await this.workspace.workspaceState() };
  }

  @Get('worktree-pool')
  @ApiOperation({
    summary:
      "The prepared worktrees (worktreePool): made at the base's tip with their setup done, handed to the next Requirements that start",
  })
  @ApiOkResponse({ type: WorktreePoolResponseDto })
  getWorktreePool(): Promise<WorktreePoolResponseDto> {
    return this.pool.status();
  }

  @Post('first-commit')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Make the repository's first commit, empty (nothing staged or in the working files changes), so later Requirements get their own worktree",
  })
  @ApiOkResponse({ type: WorkspaceGitResponseDto })
  @ApiConflictResponse({
    description:
      'Not a repository (workspace_not_git), it already has a commit (workspace_has_commit), files are staged (staged_changes), or git has no identity to commit as (git_identity_missing)',
  })
  makeFirstCommit(@Actor() actor: EventActor): Promise<WorkspaceGitResponseDto> {
    return this.workspace.makeFirstCommit(actor);
  }
}
