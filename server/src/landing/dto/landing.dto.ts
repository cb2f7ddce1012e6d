import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsString,
  Matches,
  MaxLength,
  ValidateIf,
} from 'class-validator';

import {
  ConflictPair,
  ConflictRadar,
  LAND_METHODS,
  LANDING_QUEUE_STATES,
  LOCAL_LAND_METHODS,
  LandMethod,
  LandingQueue,
  LandingQueueItem,
  LandingQueueState,
  LocalLandMethod,
  MESSAGE_LAND_METHODS,
  MessageLandMethod,
  PULL_REQUEST_MISSING,
  PullRequestMissing,
} from '@libs/contracts';

import { ValidateEnum, ValidateText } from '../../core/validation';
import { PullRequestResponseDto } from '../../pull-requests/dto/pull-request.dto';
import { RequirementConflictResponseDto } from '../../requirements/dto/landing.dto';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';

/** The longest commit message a land takes (a person's own; git takes more, a review does not need it). */
export const LAND_MESSAGE_MAX = 20_000;

/** The most Requirements the merge queue holds (a request's cost stays bounded). */
export const LANDING_QUEUE_MAX = 200;

export class LandRequirementDto {
  @ValidateEnum(
    LAND_METHODS,
    'merge: a merge commit on the base; squash: one commit with the title and a summary; rebase: its commits replayed on the base; pull_request: push the branch and open a PR on GitHub',
  )
  method!: LandMethod;

  @ApiPropertyOptional({
    description:
      "Commit the worktree's uncommitted work on its branch first, instead of refusing with worktree_dirty (every method)",
  })
  @ValidateIf((_o, v) => v !== undefined)
  @IsBoolean()
  commitPending?: boolean;

  @ApiPropertyOptional({
    description:
      "The work you were shown (the Changes tab's headSha: the branch's head, with its uncommitted work on top when there was any): the land takes exactly that, or is refused with head_moved when the work changed since. Absent: the work as it is now",
    example: '3f1c…(40 hex)',
  })
  @ValidateIf((_o, v) => v !== undefined)
  @IsString()
  @Matches(/^([0-9a-f]{40}|[0-9a-f]{64})$/, {
    message: 'expectedHead must be a full commit id (40 or 64 lowercase hex digits)',
  })
  expectedHead?: string;

  @ApiPropertyOptional({
    description:
      'Confirm the Requirement done once landed when it waits for confirmation (local methods; true when absent)',
  })
  @ValidateIf((_o, v) => v !== undefined)
  @IsBoolean()
  markDone?: boolean;

  @ApiPropertyOptional({
    description:
      "The commit message of a merge or squash as you wrote it (its first line the subject); absent: GET /requirements/:id/land-message's. Refused for rebase and pull_request (message_not_applicable) and when blank (empty_message)",
    maxLength: LAND_MESSAGE_MAX,
  })
  @ValidateIf((_o, v) => v !== undefined)
  @IsString()
  @MaxLength(LAND_MESSAGE_MAX)
  @Matches(/^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/, {
    message: 'message must not contain control characters other than tabs and newlines',
  })
  message?: string;
}

export class LandMessageQueryDto {
  @ValidateEnum(MESSAGE_LAND_METHODS, 'The land method whose message to write')
  method!: MessageLandMethod;
}

export class PullRequestReadinessDto {
  @ApiProperty({ description: 'Whether a pull request can be opened from here: a GitHub remote and a token' })
  available!: boolean;
  @ApiProperty({ enum: PULL_REQUEST_MISSING, nullable: true, description: 'The first thing missing' })
  missing!: PullRequestMissing | null;
  @ApiProperty({ description: 'What is missing and how to add it', nullable: true, type: String })
  reason!: string | null;
  @ApiProperty({ description: "The GitHub remote's URL (no credentials)", nullable: true, type: String })
  remote!: string | null;
}

export class LandMessageDto {
  @ApiProperty({ enum: MESSAGE_LAND_METHODS }) method!: MessageLandMethod;
  @ApiProperty({
    description: "The commit message the land writes unless you write your own: the title, then the agent's summary",
  })
  message!: string;
}

export class LandResponseDto {
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
  @ApiProperty({ enum: LAND_METHODS }) method!: LandMethod;
  @ApiProperty({
    description: "The base's new commit that holds the work (null for pull_request)",
    nullable: true,
    type: String,
  })
  commit!: string | null;
  @ApiProperty({
    description: 'The pull request opened and registered (pull_request only)',
    nullable: true,
    type: PullRequestResponseDto,
  })
  pullRequest!: PullRequestResponseDto | null;
}

export class ConflictPairDto implements ConflictPair {
  @ApiProperty() a!: string;
  @ApiProperty() b!: string;
  @ApiProperty({ type: [String] }) paths!: string[];
}

export class RadarRequirementDto {
  @ApiProperty() requirementId!: string;
  @ApiProperty() title!: string;
  @ApiProperty({ nullable: true, type: Boolean }) mergesCleanly!: boolean | null;
  @ApiProperty({ type: [String] }) conflictPaths!: string[];
  @ApiProperty({ type: [RequirementConflictResponseDto] }) conflictsWith!: RequirementConflictResponseDto[];
  @ApiProperty({ nullable: true, type: Number }) behindBy!: number | null;
  @ApiProperty({ nullable: true, type: String }) baseSha!: string | null;
  @ApiProperty({ nullable: true, type: String }) headSha!: string | null;
  @ApiProperty({ nullable: true, type: String }) checkedAt!: string | null;
}

export class ConflictRadarResponseDto implements ConflictRadar {
  @ApiProperty({ description: 'Pairs of live Requirements whose work conflicts, and where', type: [ConflictPairDto] })
  pairs!: ConflictPairDto[];
  @ApiProperty({ description: 'Every live Requirement with work to land', type: [RadarRequirementDto] })
  requirements!: RadarRequirementDto[];
  @ApiProperty({ nullable: true, type: String }) checkedAt!: string | null;
}

export class LandingQueueItemDto implements LandingQueueItem {
  @ApiProperty() requirementId!: string;
  @ApiProperty() title!: string;
  @ApiProperty({ enum: LAND_METHODS }) method!: LandMethod;
  @ApiProperty({ description: '1 lands next' }) position!: number;
  @ApiProperty({ enum: LANDING_QUEUE_STATES }) state!: LandingQueueState;
  @ApiProperty({ description: 'Why it is paused', nullable: true, type: String }) reason!: string | null;
  @ApiProperty({ type: [String] }) conflictPaths!: string[];
  @ApiProperty({
    description: 'The work you were shown when queueing it: only that lands (null: the work as it is at its turn)',
    nullable: true,
    type: String,
  })
  expectedHead!: string | null;
  @ApiProperty() addedAt!: string;
}

export class LandingQueueResponseDto implements LandingQueue {
  @ApiProperty({ type: [LandingQueueItemDto] }) items!: LandingQueueItemDto[];
}

export class QueueLandingDto {
  @ValidateText({ description: 'The Requirement to land', example: 'req_…', max: 100, min: 1 })
  requirementId!: string;

  @ValidateEnum(LOCAL_LAND_METHODS, 'How the queue lands it (local methods only)')
  method!: LocalLandMethod;

  @ApiPropertyOptional({
    description:
      "The work you were shown (the Changes tab's headSha): the queue lands exactly that, and pauses it (head_moved) when its work changes before its turn (its agent rebased it, say); look again and queue it again. Absent: the queue lands the work as it is at its turn",
  })
  @ValidateIf((_o, v) => v !== undefined)
  @IsString()
  @Matches(/^([0-9a-f]{40}|[0-9a-f]{64})$/, {
    message: 'expectedHead must be a full commit id (40 or 64 lowercase hex digits)',
  })
  expectedHead?: string;
}

export class ReorderLandingQueueDto {
  @ApiProperty({
    description: 'Every queued Requirement, each once, in the order to land them',
    isArray: true,
    maxItems: LANDING_QUEUE_MAX,
    type: String,
  })
  @IsArray()
  @ArrayMinSize(0)
  @ArrayMaxSize(LANDING_QUEUE_MAX)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  requirementIds!: string[];
}
