import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { IsBoolean, ValidateIf } from 'class-validator';

import {
  AGENT_REQUIREMENT_ACTIONS,
  AgentRequirementAction,
  ISOLATION_MODES,
  IsolationMode,
  LIMITS,
  PROVIDERS,
  Provider,
} from '@libs/contracts';

import { BudgetField, BudgetInputDto } from '../../requirements/dto/budget.dto';
import { OptionalEnum, OptionalText, ValidateEnum, ValidateText } from '../../core/validation';
import { MessageResponseDto } from '../../messages/dto/message-response.dto';
import { CreateRequirementDto } from '../../requirements/dto/create-requirement.dto';
import { RequirementLandingResponseDto } from '../../requirements/dto/landing.dto';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';

const sessionId = (description: string) => ValidateText({ description, example: 'ses_…', max: 100, min: 1 });
const requirementId = (description: string) => ValidateText({ description, example: 'req_…', max: 100, min: 1 });

export class ProposeRequirementDto extends OmitType(CreateRequirementDto, ['provider', 'budget'] as const) {
  @BudgetField(
    "What its RD runs may spend ({maxTokens, maxCostUsd}). From an agent's run, at most what the parent's tree has left under its budget and every ancestor's (or the configuration's default where none limits a kind): more, or null, is lowered to that with warnings: [\"budget_clamped\"]; absent: the default, within the same bounds. The owner's token sets any budget (null for none)",
  )
  budget?: BudgetInputDto | null;

  @sessionId("The proposing RD session (the run's own)")
  sourceSessionId!: string;

  @OptionalText({
    description: "The parent: the proposing session's Requirement (the default)",
    example: 'req_…',
    max: 100,
    min: 1,
  })
  parentRequirementId?: string;

  @OptionalEnum(PROVIDERS, "Which coding agent runs the new Requirement; defaults to the proposing session's")
  provider?: Provider;

  @ApiPropertyOptional({ default: false, description: 'Start its RD session at once instead of leaving it todo' })
  @ValidateIf((_o, v) => v !== undefined)
  @IsBoolean()
  start?: boolean;
}

export class AgentRequirementActionDto {
  @requirementId("The acting RD session's Requirement (the parent of the target)")
  sourceRequirementId!: string;

  @sessionId('The acting RD session (the one that proposed the target)')
  sourceSessionId!: string;

  @ValidateEnum(
    AGENT_REQUIREMENT_ACTIONS,
    'start or retry its work, stop its run, delete it (todo only), mark it done (waiting_confirmation only)',
  )
  action!: AgentRequirementAction;
}

export class AgentRequirementActionResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: AGENT_REQUIREMENT_ACTIONS }) action!: AgentRequirementAction;
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
  @ApiProperty({
    description: 'The run started or interrupted, when the action concerns one',
    nullable: true,
    type: String,
  })
  runId!: string | null;
}

export class RelatedQueryDto {
  @sessionId("The calling RD session (the run's own)")
  sourceSessionId!: string;
}

export class RelatedRequirementsDto {
  @ApiProperty({ nullable: true, type: RequirementResponseDto }) parent!: RequirementResponseDto | null;
  @ApiProperty({ type: [RequirementResponseDto] }) children!: RequirementResponseDto[];
}

export class RelatedMessageDto {
  @sessionId("The sending RD session (the run's own)")
  sourceSessionId!: string;

  @ValidateText({
    description: "What to tell the related Requirement's agent",
    example: 'Use contract version 2.',
    max: LIMITS.messageLength,
    min: 1,
    pattern: /\S/,
  })
  message!: string;
}

export class RelatedMessageResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() sourceRequirementId!: string;
  @ApiProperty() targetRequirementId!: string;
  @ApiProperty({ description: "True when the message waits behind the target's active run" }) queued!: boolean;
  @ApiProperty({ type: MessageResponseDto }) message!: MessageResponseDto;
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
}

export class AgentLandingResponseDto {
  @ApiProperty({ description: "The run's own Requirement" }) requirementId!: string;
  @ApiProperty() title!: string;
  @ApiProperty({
    enum: ISOLATION_MODES,
    description:
      'worktree: it has a branch of its own to land; in_place: its changes are in the checkout, nothing to land',
  })
  isolation!: IsolationMode;
  @ApiProperty({ description: 'The branch it lands on', nullable: true, type: String }) baseRef!: string | null;
  @ApiProperty({ description: 'Its own branch (null before its first run made one)', nullable: true, type: String })
  branch!: string | null;
  @ApiProperty({
    description: "The conflict radar's last answer for its work, and its land once it happened",
    type: RequirementLandingResponseDto,
  })
  landing!: RequirementLandingResponseDto;
  @ApiProperty({ description: 'The answer in one paragraph, with what to do (rebase onto the base when it conflicts)' })
  summary!: string;
}
