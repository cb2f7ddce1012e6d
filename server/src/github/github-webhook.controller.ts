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

import { GitHubWebhookService, WebhookOutcome } from './github-webhook.service';

export class WebhookResponseDto implements WebhookOutcome {
  @ApiProperty() accepted!: boolean;
  @ApiProperty({ description: 'X-GitHub-Event' }) event!: string;
  @ApiProperty({
    description:
      'Tracked PRs the event concerns, looked at again now (0 for a payload over 1 MB: then every tracked PR is)',
  })
  pullRequests!: number;
}

@ApiTags('github')
@Controller('github')
export class GitHubWebhookController {
  constructor(private readonly webhooks: GitHubWebhookService) {}

  /** Authenticated by its signature, not by the local token: GitHub cannot hold that. */
  @Post('webhook')
  @HttpCode(202)
  @ApiOperation({
    summary: 'GitHub webhook receiver (off unless githubWebhookSecret is set); signed with X-Hub-Signature-256',
  })
  @ApiAcceptedResponse({ type: WebhookResponseDto })
  @ApiBadRequestResponse()
  @ApiUnauthorizedResponse({ description: 'Missing or wrong signature: nothing is processed' })
  @ApiNotFoundResponse({ description: 'The webhook is off' })
  @ApiTooManyRequestsResponse({
    description: 'Too many deliveries are being received at once: retry after Retry-After seconds',
  })
  receiveWebhook(
    @Req() req: Request,
    @Headers('x-github-event') event: string | undefined,
    @Headers('x-hub-signature-256') signature: string | undefined,
  ): Promise<WebhookResponseDto> {
    // The service reads the body only once the webhook is on and the headers may be GitHub's.
    const length = req.headers['content-length'];
    return this.webhooks.receive({
      body: req,
      declaredLength: length !== undefined && /^\d+$/.test(length) ? Number(length) : null,
      event,
      signature,
    });
  }
}
