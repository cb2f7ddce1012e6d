import { ApiProperty } from '@nestjs/swagger';

import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';
import { AgentRunResponseDto } from '../../runs/dto/run-response.dto';

/** What a move fetched of the Requirement's branch from the shared remote. */
export class MovedBranchDto {
  @ApiProperty({
    description: "The Requirement's branch; null when it runs in place (no worktree)",
    nullable: true,
    type: String,
  })
  branch!: string | null;
  @ApiProperty({
    description: 'The commit fetched; null when the remote had none (the branch starts again from its base here)',
    nullable: true,
    type: String,
  })
  fetched!: string | null;
  @ApiProperty({ description: 'Why nothing was fetched, when nothing was', nullable: true, type: String }) reason!:
    string | null;
}

export class MoveResponseDto {
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
  @ApiProperty({ type: MovedBranchDto }) branch!: MovedBranchDto;
  @ApiProperty({
    description: 'The run the old runner left running (now failed), if any',
    nullable: true,
    type: String,
  })
  orphanedRunId!: string | null;
  @ApiProperty({
    description: 'The run started here to go on with the pending input, if any',
    nullable: true,
    type: AgentRunResponseDto,
  })
  run!: AgentRunResponseDto | null;
}
