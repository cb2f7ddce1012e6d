import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';

import {
  AUTO_REVIEW_OUTCOMES,
  AUTO_REVIEW_STATES,
  AutoReviewOutcome,
  AutoReviewState,
  FORGES,
  Forge,
  PROVIDERS,
  PULL_REQUEST_STATUSES,
  Provider,
  PullRequest,
  PullRequestAutoReview,
  PullRequestStatus,
} from '@libs/contracts';

import { PageInfoDto, PageQueryDto } from '../../core/http/pagination';
import { OptionalEnum, OptionalText, ValidateEnum, ValidateText } from '../../core/validation';
import type { PullRequestEntity } from '../pull-request.entity';

export class RegisterPullRequestDto {
  @ValidateText({ description: "The Requirement the PR belongs to (the run's own)", max: 100, min: 1 })
  requirementId!: string;

  @OptionalEnum(FORGES, 'Where the PR lives: github (default) or gitlab (a merge request)')
  forge?: Forge;

  @ValidateText({
    description: "owner/name on GitHub; the project's full path on GitLab (group/subgroup/project)",
    example: 'org/repo',
    max: 255,
    min: 3,
    // GitLab nests groups (at most 20 levels); GitHub's owner/name is checked by the service.
    pattern: /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){1,20}$/,
  })
  repository!: string;

  @ApiProperty({ description: 'The PR number (the MR iid)', example: 184, maximum: 2_147_483_647, minimum: 1 })
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  number!: number;

  @ValidateText({
    description: "The PR's web address",
    example: 'https://github.com/org/repo/pull/184',
    max: 2000,
    min: 8,
    pattern: /^https?:\/\/\S+$/,
  })
  url!: string;

  @ValidateText({ description: 'PR title', max: 1000, min: 1 })
  title!: string;

  @ValidateText({ description: 'Branch the PR merges into', example: 'main', max: 255, min: 1 })
  baseBranch!: string;

  @ValidateText({ description: 'Branch the PR merges from', example: 'feature/compaction', max: 255, min: 1 })
  headBranch!: string;

  @ValidateText({ description: 'Head commit SHA', max: 64, min: 7, pattern: /^[0-9a-fA-F]+$/ })
  headSha!: string;

  @ValidateEnum(PULL_REQUEST_STATUSES, 'Lifecycle status, used only when the PR is first registered')
  status!: PullRequestStatus;
}

export class ListPullRequestsQueryDto extends PageQueryDto {
  @OptionalText({ description: 'Only the PRs of this Requirement', max: 100 })
  requirementId?: string;
}

export class PullRequestAutoReviewDto implements PullRequestAutoReview {
  @ApiProperty({
    description: 'off until the loop first reviews the PR; clean and max_rounds end the loop',
    enum: AUTO_REVIEW_STATES,
  })
  state!: AutoReviewState;
  @ApiProperty({ description: 'Rounds counted so far (a failed round is not counted)' }) round!: number;
  @ApiProperty({ nullable: true, type: Number }) maxRounds!: number | null;
  @ApiProperty({ enum: PROVIDERS, nullable: true }) provider!: Provider | null;
  @ApiProperty({ description: 'The head the latest round reviewed', nullable: true, type: String }) headSha!:
    string | null;
  @ApiProperty({
    description: 'How the latest round ended (null while the first runs)',
    enum: AUTO_REVIEW_OUTCOMES,
    nullable: true,
  })
  lastOutcome!: AutoReviewOutcome | null;
}

export class PullRequestResponseDto implements PullRequest {
  @ApiProperty({ example: 'pr_…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: FORGES }) forge!: Forge;
  @ApiProperty() repository!: string;
  @ApiProperty() number!: number;
  @ApiProperty() url!: string;
  @ApiProperty() title!: string;
  @ApiProperty() baseBranch!: string;
  @ApiProperty() headBranch!: string;
  @ApiProperty() headSha!: string;
  @ApiProperty({ enum: PULL_REQUEST_STATUSES }) status!: PullRequestStatus;
  @ApiProperty({ description: "Its Requirement's cross-model review loop on this PR", type: PullRequestAutoReviewDto })
  autoReview!: PullRequestAutoReviewDto;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
}

export class PullRequestPageDto extends PageInfoDto {
  @ApiProperty({ type: [PullRequestResponseDto] }) items!: PullRequestResponseDto[];
}

export function toPullRequestResponse(entity: PullRequestEntity): PullRequestResponseDto {
  return {
    autoReview: {
      headSha: entity.autoReviewHeadSha,
      lastOutcome: entity.autoReviewOutcome,
      maxRounds: entity.autoReviewMaxRounds,
      provider: entity.autoReviewProvider,
      round: entity.autoReviewRound,
      state: entity.autoReviewState,
    },
    baseBranch: entity.baseBranch,
    createdAt: entity.createdAt,
    forge: entity.forge,
    headBranch: entity.headBranch,
    headSha: entity.headSha,
    id: entity.id,
    number: entity.number,
    repository: entity.repository,
    requirementId: entity.requirementId,
    status: entity.status,
    title: entity.title,
    updatedAt: entity.updatedAt,
    url: entity.url,
  };
}
