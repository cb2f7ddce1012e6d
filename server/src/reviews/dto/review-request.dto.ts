import { ApiProperty } from '@nestjs/swagger';

import {
  LIMITS,
  MODEL_NAME_PATTERN,
  PROVIDERS,
  Provider,
  REASONING_EFFORTS,
  REVIEW_REQUESTERS,
  REVIEW_REQUEST_STATUSES,
  REVIEW_VERDICTS,
  ReasoningEffort,
  ReviewRequest,
  ReviewRequestStatus,
  ReviewRequester,
  ReviewVerdict,
} from '@libs/contracts';

import { PageInfoDto, PageQueryDto } from '../../core/http/pagination';
import { OptionalEnum, OptionalText, ValidateEnum } from '../../core/validation';
import { AgentRunResponseDto } from '../../runs/dto/run-response.dto';
import type { ReviewRequestEntity } from '../review-request.entity';

export class CreateReviewRequestDto {
  @ValidateEnum(PROVIDERS, 'Which coding agent reviews')
  provider!: Provider;

  @OptionalText({
    description: "Model for the reviewer; null for the CLI's default",
    example: 'gpt-5.1-codex',
    max: LIMITS.modelLength,
    min: 1,
    nullable: true,
    pattern: MODEL_NAME_PATTERN,
  })
  model?: string | null;

  @OptionalEnum(REASONING_EFFORTS, "Reasoning effort for the reviewer; null for the CLI's default", true)
  reasoningEffort?: ReasoningEffort | null;

  @OptionalText({
    description: 'What the review should focus on',
    example: 'Concurrency in the flush path',
    max: LIMITS.reviewPromptLength,
    nullable: true,
  })
  prompt?: string | null;
}

export class ListReviewRequestsQueryDto extends PageQueryDto {
  @OptionalText({ description: 'Only the reviews of this PR', max: 100 })
  pullRequestId?: string;
}

export class ReviewRequestResponseDto implements ReviewRequest {
  @ApiProperty({ example: 'rev_…' }) id!: string;
  @ApiProperty() pullRequestId!: string;
  @ApiProperty({ description: "The PR's Requirement, which receives the reviewer's summary" }) requirementId!: string;
  @ApiProperty() runId!: string;
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  @ApiProperty({ nullable: true, type: String }) model!: string | null;
  @ApiProperty({ enum: REASONING_EFFORTS, nullable: true }) reasoningEffort!: ReasoningEffort | null;
  @ApiProperty({ nullable: true, type: String }) prompt!: string | null;
  @ApiProperty({ description: 'The PR head the review was asked for' }) targetHeadSha!: string;
  @ApiProperty({ enum: REVIEW_REQUEST_STATUSES }) status!: ReviewRequestStatus;
  @ApiProperty({
    description: "human, or review_loop: the Requirement's cross-model review loop",
    enum: REVIEW_REQUESTERS,
  })
  requestedBy!: ReviewRequester;
  @ApiProperty({
    description:
      "The reviewer's last line: REVIEW: FINDINGS or REVIEW: NO FINDINGS (null without one, or before it finished)",
    enum: REVIEW_VERDICTS,
    nullable: true,
  })
  verdict!: ReviewVerdict | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({ description: "The PR's head has moved since: the review is of older code" }) stale!: boolean;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
  @ApiProperty({ nullable: true, type: String }) finishedAt!: string | null;
}

export class ReviewRequestPageDto extends PageInfoDto {
  @ApiProperty({ type: [ReviewRequestResponseDto] }) items!: ReviewRequestResponseDto[];
}

export class CreateReviewResponseDto {
  @ApiProperty() accepted!: boolean;
  @ApiProperty() pullRequestId!: string;
  @ApiProperty({ type: ReviewRequestResponseDto }) reviewRequest!: ReviewRequestResponseDto;
  @ApiProperty({ type: AgentRunResponseDto }) run!: AgentRunResponseDto;
}

export function toReviewRequestResponse(entity: ReviewRequestEntity): ReviewRequestResponseDto {
  return {
    createdAt: entity.createdAt,
    error: entity.error,
    finishedAt: entity.finishedAt,
    id: entity.id,
    model: entity.model,
    prompt: entity.prompt,
    provider: entity.provider,
    pullRequestId: entity.pullRequestId,
    reasoningEffort: entity.reasoningEffort,
    requestedBy: entity.requestedBy,
    requirementId: entity.requirementId,
    runId: entity.runId,
    stale: Boolean(entity.stale),
    status: entity.status,
    targetHeadSha: entity.targetHeadSha,
    updatedAt: entity.updatedAt,
    verdict: entity.verdict ?? null,
  };
}
