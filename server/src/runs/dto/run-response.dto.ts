import { ApiProperty } from '@nestjs/swagger';

import {
  AgentRun,
  AgentTraceEvent,
  PROVIDERS,
  Provider,
  REASONING_EFFORTS,
  RUN_ROLES,
  RUN_STATUSES,
  ReasoningEffort,
  RunRole,
  RunStatus,
  TRACE_KINDS,
  TRACE_STATUSES,
  TraceKind,
  TraceStatus,
} from '@libs/contracts';

import { PageInfoDto } from '../../core/http/pagination';
import { MessageResponseDto } from '../../messages/dto/message-response.dto';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';
import type { AgentRunEntity } from '../agent-run.entity';

export class AgentRunResponseDto implements AgentRun {
  @ApiProperty({ example: 'run_2b4c…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ nullable: true, type: String }) sessionId!: string | null;
  @ApiProperty({ enum: RUN_ROLES }) role!: RunRole;
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  @ApiProperty({ nullable: true, type: String }) model!: string | null;
  @ApiProperty({ enum: REASONING_EFFORTS, nullable: true }) reasoningEffort!: ReasoningEffort | null;
  @ApiProperty({ enum: RUN_STATUSES }) status!: RunStatus;
  @ApiProperty({ nullable: true, type: String }) taskSummary!: string | null;
  @ApiProperty({ nullable: true, type: String }) nativeSessionId!: string | null;
  @ApiProperty({ nullable: true, type: Number }) exitCode!: number | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({ nullable: true, type: Number }) inputFromSequence!: number | null;
  @ApiProperty({ nullable: true, type: Number }) inputToSequence!: number | null;
  @ApiProperty() startedAt!: string;
  @ApiProperty({ nullable: true, type: String }) finishedAt!: string | null;
  @ApiProperty({ nullable: true, type: Number }) inputTokens!: number | null;
  @ApiProperty({ nullable: true, type: Number }) cachedInputTokens!: number | null;
  @ApiProperty({ nullable: true, type: Number }) outputTokens!: number | null;
  @ApiProperty({ nullable: true, type: Number }) reasoningOutputTokens!: number | null;
  @ApiProperty({
    description: 'What the provider says the run cost, in US dollars (Claude Code reports it; null when not reported)',
    nullable: true,
    type: Number,
  })
  costUsd!: number | null;
}

export class AgentTraceEventResponseDto implements AgentTraceEvent {
  @ApiProperty({ example: 'trc_…' }) id!: string;
  @ApiProperty() runId!: string;
  @ApiProperty() sequence!: number;
  @ApiProperty({ enum: TRACE_KINDS }) kind!: TraceKind;
  @ApiProperty({ enum: TRACE_STATUSES, nullable: true }) status!: TraceStatus | null;
  @ApiProperty() title!: string;
  @ApiProperty({ nullable: true, type: String }) detail!: string | null;
  @ApiProperty({ nullable: true, type: String }) toolName!: string | null;
  @ApiProperty({ nullable: true, type: String }) toolCallId!: string | null;
  @ApiProperty({ nullable: true, type: String }) nativeType!: string | null;
  @ApiProperty() createdAt!: string;
}

export class AgentRunPageDto extends PageInfoDto {
  @ApiProperty({ type: [AgentRunResponseDto] }) items!: AgentRunResponseDto[];
}

export class TracePageDto extends PageInfoDto {
  @ApiProperty({ type: [AgentTraceEventResponseDto] }) items!: AgentTraceEventResponseDto[];
}

export class StartResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: ['start'] }) action!: 'start';
  @ApiProperty({ type: RequirementResponseDto }) requirement!: RequirementResponseDto;
  @ApiProperty({ nullable: true, type: AgentRunResponseDto }) run!: AgentRunResponseDto | null;
  @ApiProperty({ nullable: true, type: MessageResponseDto }) message!: MessageResponseDto | null;
}

export class InterruptResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: ['interrupt'] }) action!: 'interrupt';
  @ApiProperty() runId!: string;
}

export function toRunResponse(run: AgentRunEntity): AgentRunResponseDto {
  return {
    cachedInputTokens: run.cachedInputTokens,
    costUsd: run.costUsd,
    error: run.error,
    exitCode: run.exitCode,
    finishedAt: run.finishedAt,
    id: run.id,
    inputFromSequence: run.inputFromSequence,
    inputTokens: run.inputTokens,
    inputToSequence: run.inputToSequence,
    model: run.model,
    nativeSessionId: run.nativeSessionId,
    outputTokens: run.outputTokens,
    provider: run.provider,
    reasoningEffort: run.reasoningEffort,
    reasoningOutputTokens: run.reasoningOutputTokens,
    requirementId: run.requirementId,
    role: run.role,
    sessionId: run.sessionId,
    startedAt: run.startedAt,
    status: run.status,
    taskSummary: run.taskSummary,
  };
}
