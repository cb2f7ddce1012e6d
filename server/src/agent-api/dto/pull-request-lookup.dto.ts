import { ApiProperty } from '@nestjs/swagger';

import { FORGES, Forge, PULL_REQUEST_STATUSES, PullRequestStatus } from '@libs/contracts';

import { ValidateText } from '../../core/validation';

export class LookupPullRequestDto {
  @ValidateText({
    description: "The PR's web address (a GitLab merge request's too)",
    example: 'https://github.com/org/repo/pull/184',
    max: 2000,
    min: 8,
    pattern: /^https?:\/\/\S+$/,
  })
  url!: string;
}

/** What the forge says of a PR (or MR): the fields `POST /api/agent/pull-requests` takes. */
export class PullRequestLookupResponseDto {
  @ApiProperty({ enum: FORGES }) forge!: Forge;
  @ApiProperty({ example: 'org/repo' }) repository!: string;
  @ApiProperty() number!: number;
  @ApiProperty() url!: string;
  @ApiProperty() title!: string;
  @ApiProperty() baseBranch!: string;
  @ApiProperty() headBranch!: string;
  @ApiProperty() headSha!: string;
  @ApiProperty({ enum: PULL_REQUEST_STATUSES }) status!: PullRequestStatus;
}
