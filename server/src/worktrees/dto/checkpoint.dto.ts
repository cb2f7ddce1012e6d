import { ApiProperty } from '@nestjs/swagger';

import { CHECKPOINT_KINDS, Checkpoint, CheckpointKind, LIMITS } from '@libs/contracts';

import { MessageResponseDto } from '../../messages/dto/message-response.dto';
import { OptionalText, ValidateText } from '../../core/validation';
import type { RequirementCheckpointEntity } from '../requirement-checkpoint.entity';

export class CheckpointDto implements Checkpoint {
  @ApiProperty({ example: 'ckp_…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ description: 'The run it was taken for (null: before a rewind)', nullable: true, type: String })
  runId!: string | null;
  @ApiProperty({ enum: CHECKPOINT_KINDS }) kind!: CheckpointKind;
  @ApiProperty() at!: string;
  @ApiProperty({ description: 'The working state as a commit (head itself when nothing was uncommitted)' })
  commit!: string;
  @ApiProperty({ description: "The branch's head then" }) head!: string;
  @ApiProperty({ description: 'Files that differ from the checkpoint before' }) filesChanged!: number;
}

export class CheckpointListDto {
  @ApiProperty({ type: [CheckpointDto] }) items!: CheckpointDto[];
}

export class RewindDto {
  @ValidateText({ description: 'The checkpoint to go back to (ckp_…)', max: 100, min: 1 })
  checkpointId!: string;

  @OptionalText({ description: 'Why, for the agent (its next prompt shows it)', max: LIMITS.reviewCommentBytes })
  note?: string;
}

export class RewindResponseDto {
  @ApiProperty({
    type: CheckpointDto,
    description: 'The checkpoint taken just before: rewinding to it undoes this rewind',
  })
  saved!: CheckpointDto;
  @ApiProperty({ type: CheckpointDto, description: 'The checkpoint the working copy is back at' })
  restored!: CheckpointDto;
  @ApiProperty({ type: MessageResponseDto, description: 'The system message that tells the agent what was undone' })
  message!: MessageResponseDto;
}

export function toCheckpoint(row: RequirementCheckpointEntity): CheckpointDto {
  return {
    at: row.at,
    commit: row.commit,
    filesChanged: row.filesChanged,
    head: row.head,
    id: row.id,
    kind: row.kind,
    requirementId: row.requirementId,
    runId: row.runId,
  };
}
