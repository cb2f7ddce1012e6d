import { ApiProperty } from '@nestjs/swagger';

export const WORKSPACE_GIT_STATES = ['repository', 'no_commit', 'not_git'] as const;
export type WorkspaceGitState = (typeof WORKSPACE_GIT_STATES)[number];

export class WorkspaceGitResponseDto {
  @ApiProperty({
    description:
      'repository: has a commit (Requirements get worktrees); no_commit: `git init` only (agents work in place, in the checkout); not_git',
    enum: WORKSPACE_GIT_STATES,
  })
  state!: WorkspaceGitState;

  @ApiProperty({ description: 'The commit just made (first-commit only)', nullable: true, type: String })
  commit!: string | null;
}
