import { ApiProperty } from '@nestjs/swagger';

import { CHANGED_FILE_STATUSES, ChangedFile, ChangedFileStatus, ISOLATION_MODES, IsolationMode, RequirementChanges, RequirementWorktree } from '@libs/contracts';

import { OptionalText, ValidateText } from '../../core/validation';
import type { RequirementWorktreeEntity } from '../requirement-worktree.entity';

export class RequirementWorktreeResponseDto implements RequirementWorktree {
  @ApiProperty({ enum: ISOLATION_MODES }) mode!: IsolationMode;
  @ApiProperty({ description: "The worktree's top directory (the checkout itself in place); null once removed", nullable: true, type: String }) path!: string | null;
  @ApiProperty({ example: 'agent/add-timings-1a2b3c4d', nullable: true, type: String }) branch!: string | null;
  @ApiProperty({ nullable: true, type: String }) baseRef!: string | null;
  @ApiProperty({ description: "The base ref's commit when the worktree was created", nullable: true, type: String }) baseSha!: string | null;
  @ApiProperty({ nullable: true, type: String }) headSha!: string | null;
  @ApiProperty({ description: 'Commits on the branch that the base ref lacks' }) ahead!: number;
  @ApiProperty({ description: 'Commits on the base ref that the branch lacks' }) behind!: number;
  @ApiProperty({ description: 'Uncommitted or untracked work in the worktree' }) dirty!: boolean;
  @ApiProperty({ description: 'When the worktree was removed (its branch may remain); the next run recreates it', nullable: true, type: String }) removedAt!: string | null;
  @ApiProperty({ description: 'When the git figures were last read', nullable: true, type: String }) refreshedAt!: string | null;
}

export class ChangedFileDto implements ChangedFile {
  @ApiProperty() path!: string;
  @ApiProperty({ nullable: true, type: String }) oldPath!: string | null;
  @ApiProperty({ enum: CHANGED_FILE_STATUSES }) status!: ChangedFileStatus;
  @ApiProperty() additions!: number;
  @ApiProperty() deletions!: number;
  @ApiProperty() binary!: boolean;
}

export class RequirementChangesResponseDto implements RequirementChanges {
  @ApiProperty() baseRef!: string;
  @ApiProperty() mergeBaseSha!: string;
  @ApiProperty() headSha!: string;
  @ApiProperty({ type: [ChangedFileDto] }) files!: ChangedFileDto[];
  @ApiProperty({ description: 'True when the list was cut (more than 5,000 files, or a bound on size or time)' }) truncated!: boolean;
}

export class ChangesDiffQueryDto {
  @ValidateText({ description: 'The file, relative to the worktree', example: 'src/app.ts', max: 4096, min: 1 })
  path!: string;

  @OptionalText({ description: "A renamed file's old path (from the changes list), so the diff shows the rename", max: 4096, min: 1 })
  oldPath?: string;
}

/** Null until a run prepared where the Requirement works. */
export function toWorktreeResponse(row: RequirementWorktreeEntity | null | undefined): RequirementWorktreeResponseDto | null {
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
    mode: row.isolation,
    path: row.removedAt === null ? row.path : null,
    refreshedAt: row.refreshedAt,
    removedAt: row.removedAt,
  };
}
