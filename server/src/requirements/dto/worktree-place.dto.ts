import { ApiProperty } from '@nestjs/swagger';

import { ISOLATION_MODES, IsolationMode, RequirementWorktree, WORKTREE_LAYOUTS, WorktreeLayout } from '@libs/contracts';

import { RequirementWorktreeEntity, WORKTREE_PORT_BLOCK } from '../requirement-worktree.entity';

export class WorktreePortsDto {
  @ApiProperty({ description: 'AGENT_MANAGER_PORT: the first port of the block', example: 42010 }) first!: number;
  @ApiProperty({ description: 'How many ports in a row are reserved', example: 10 }) count!: number;
}

/**
 * Where a Requirement works, as its snapshot shows it. The row is the worktrees feature's to
 * write; its shape lives with the aggregate that shows it in every snapshot.
 */
export class RequirementWorktreeResponseDto implements RequirementWorktree {
  @ApiProperty({ enum: ISOLATION_MODES }) mode!: IsolationMode;
  @ApiProperty({
    description: "The worktree's top directory (the checkout itself in place); null once removed",
    nullable: true,
    type: String,
  })
  path!: string | null;
  @ApiProperty({ example: 'agent/add-timings-1a2b3c4d', nullable: true, type: String }) branch!: string | null;
  @ApiProperty({ nullable: true, type: String }) baseRef!: string | null;
  @ApiProperty({ description: "The base ref's commit when the worktree was created", nullable: true, type: String })
  baseSha!: string | null;
  @ApiProperty({ nullable: true, type: String }) headSha!: string | null;
  @ApiProperty({ description: 'Commits on the branch that the base ref lacks' }) ahead!: number;
  @ApiProperty({ description: 'Commits on the base ref that the branch lacks' }) behind!: number;
  @ApiProperty({ description: 'Uncommitted or untracked work in the worktree' }) dirty!: boolean;
  @ApiProperty({
    description:
      "How the working copy is made: a repository of the agent's own (own_repository), or a linked worktree of yours made before that existed (until its next run)",
    enum: WORKTREE_LAYOUTS,
    nullable: true,
    type: String,
  })
  layout!: WorktreeLayout | null;
  @ApiProperty({
    description:
      "The agent's work as last imported into your repository: the branch's head with its uncommitted files on top, as one commit (headSha when clean)",
    nullable: true,
    type: String,
  })
  workSha!: string | null;
  @ApiProperty({
    description: "Why the last import of the agent's work was refused, or null",
    nullable: true,
    type: String,
  })
  importError!: string | null;
  @ApiProperty({
    description: 'When the worktree was removed (its branch may remain); the next run recreates it',
    nullable: true,
    type: String,
  })
  removedAt!: string | null;
  @ApiProperty({ description: 'When the git figures were last read', nullable: true, type: String }) refreshedAt!:
    string | null;
  @ApiProperty({
    description: 'The ports reserved for it (AGENT_MANAGER_PORT is the first), or null before any were',
    nullable: true,
    type: WorktreePortsDto,
  })
  ports!: WorktreePortsDto | null;
}

/** Null until a run prepared where the Requirement works. */
export function toWorktreeResponse(
  row: RequirementWorktreeEntity | null | undefined,
): RequirementWorktreeResponseDto | null {
  if (!row || (row.path === null && row.removedAt === null)) {
    return null;
  }
  return {
    ahead: row.ahead,
    baseRef: row.baseRef,
    baseSha: row.baseSha,
    behind: row.behind,
    branch: row.branch,
    // SQLite hands booleans back as 0/1.
    dirty: Boolean(row.dirty),
    headSha: row.headSha,
    importError: row.importError ?? null,
    layout: row.layout ?? null,
    mode: row.isolation,
    path: row.removedAt === null ? row.path : null,
    ports: row.portBase === null ? null : { count: WORKTREE_PORT_BLOCK, first: row.portBase },
    refreshedAt: row.refreshedAt,
    removedAt: row.removedAt,
    workSha: row.workSha ?? null,
  };
}
