import { ApiProperty } from '@nestjs/swagger';

import { CHANGED_FILE_STATUSES, ChangedFile, ChangedFileStatus, RequirementChanges } from '@libs/contracts';

import { OptionalText, ValidateText } from '../../core/validation';

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
  @ApiProperty({ description: "The branch's head, as imported into your repository" }) headSha!: string;
  @ApiProperty({
    description:
      "What the files are listed from: the branch's head with the uncommitted and untracked work on top, as one commit (headSha when there is none). Send it as a land's expectedHead",
  })
  workSha!: string;
  @ApiProperty({ type: [ChangedFileDto] }) files!: ChangedFileDto[];
  @ApiProperty({ description: 'True when the list was cut (more than 5,000 files, or a bound on size or time)' })
  truncated!: boolean;
}

/** A range of checkpoints: what changed from one to another (or to now), instead of from the merge base. */
export class ChangesRangeQueryDto {
  @OptionalText({ description: 'From this checkpoint (ckp_…) instead of the merge base', max: 100, min: 1 })
  from?: string;

  @OptionalText({
    description: "To this checkpoint (ckp_…) instead of the agent's work now (only with from)",
    max: 100,
    min: 1,
  })
  to?: string;
}

export class ChangesDiffQueryDto extends ChangesRangeQueryDto {
  @ValidateText({ description: 'The file, relative to the worktree', example: 'src/app.ts', max: 4096, min: 1 })
  path!: string;

  @OptionalText({
    description: "A renamed file's old path (from the changes list), so the diff shows the rename",
    max: 4096,
    min: 1,
  })
  oldPath?: string;
}
