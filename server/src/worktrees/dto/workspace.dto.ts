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

export class PooledWorktreeDto {
  @ApiProperty({ description: 'Its folder (kept when a Requirement takes it)' }) path!: string;
  @ApiProperty({
    description: 'filling: being made or set up; ready: waiting for a Requirement',
    enum: ['filling', 'ready'],
  })
  state!: 'filling' | 'ready';
  @ApiProperty({ description: 'The base it was made at' }) baseRef!: string;
  @ApiProperty() baseSha!: string;
  @ApiProperty() madeAt!: string;
  @ApiProperty({ description: 'When its setup command finished', nullable: true, type: String }) setupAt!:
    string | null;
}

export class WorktreePoolFailureDto {
  @ApiProperty() at!: string;
  @ApiProperty({
    description:
      'Why the last copy could not be made (tried again when the base or the recipe changes, or after 10 minutes)',
  })
  message!: string;
}

export class WorktreePoolResponseDto {
  @ApiProperty({ description: 'worktreePool: how many copies it keeps' }) size!: number;
  @ApiProperty({ type: [PooledWorktreeDto] }) copies!: PooledWorktreeDto[];
  @ApiProperty({ nullable: true, type: WorktreePoolFailureDto }) lastFailure!: WorktreePoolFailureDto | null;
  @ApiProperty({
    description:
      'Why no copy is made now though worktreePool asks for some: a setup that uses AGENT_MANAGER_PORT or AGENT_MANAGER_BRANCH, a checkout on a detached HEAD or on a Requirement’s branch; null: none',
    nullable: true,
    type: String,
  })
  notPooled!: string | null;
}
