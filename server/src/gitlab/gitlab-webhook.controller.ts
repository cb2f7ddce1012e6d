import { Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiNotFoundResponse,
  ApiOperation,
  ApiProperty,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import type { Request } from 'express';

import { GitLabWebhookOutcome, GitLabWebhookService } from './gitlab-webhook.service';

export class GitLabWebhookResponseDto implements GitLabWebhookOutcome {
  @ApiProperty() accepted!: boolean;
  @ApiProperty({ description: 'X-Gitlab-Event' }) event!: string;
  @ApiProperty({ description: 'Tracked merge requests the event concerns, looked at again now' })
  pullRequests!: number;
}

@ApiTags('gitlab')
@Controller('gitlab')
export class GitLabWebhookController {
  constructor(private readonly webhooks: GitLabWebhookService) {}

  /** Authenticated by its secret token, not by the local token: GitLab cannot hold that. */
  @Post('webhook')
  @HttpCode(202)
  @ApiOperation({
    summary: 'GitLab webhook receiver (off unless gitlabWebhookSecret is set); authenticated by X-Gitlab-Token',
  })
  @ApiAcceptedResponse({ type: GitLabWebhookResponseDto })
  @ApiBadRequestResponse()
  @ApiUnauthorizedResponse({ description: 'Missing or wrong X-Gitlab-Token: nothing is processed' })
  @ApiNotFoundResponse({ description: 'The webhook is off' })
  @ApiTooManyRequestsResponse({ description: 'Too many deliveries are being received at once: retry shortly' })
  receiveGitLabWebhook(
    @Req() req: Request,
    @Headers('x-gitlab-event') event: string | undefined,
    @Headers('x-gitlab-token') token: string | undefined,
  ): Promise<GitLabWebhookResponseDto> {
    const length = req.headers['content-length'];
    return this.webhooks.receive({
      body: req,
      declaredLength: length !== undefined && /^\d+$/.test(length) ? Number(length) : null,
      event,
      token,
    });
  }
}
