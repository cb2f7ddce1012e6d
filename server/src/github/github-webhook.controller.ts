import { Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiNotFoundResponse, ApiOperation, ApiProperty, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';

import { invalid } from '../core/errors/domain-error';
import { GitHubWebhookService, WebhookOutcome } from './github-webhook.service';

/** GitHub caps webhook payloads at 25 MB. */
const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;

export class WebhookResponseDto implements WebhookOutcome {
  @ApiProperty() accepted: boolean;
  @ApiProperty({ description: 'X-GitHub-Event' }) event: string;
  @ApiProperty({ description: 'Tracked PRs the event concerns, looked at again now' }) pullRequests: number;
}

@ApiTags('github')
@Controller('github')
export class GitHubWebhookController {
  constructor(private readonly webhooks: GitHubWebhookService) {}

  /** Authenticated by its signature, not by the local token: GitHub cannot hold that. */
  @Post('webhook')
  @HttpCode(202)
  @ApiOperation({ summary: 'GitHub webhook receiver (off unless githubWebhookSecret is set); signed with X-Hub-Signature-256' })
  @ApiAcceptedResponse({ type: WebhookResponseDto })
  @ApiBadRequestResponse()
  @ApiUnauthorizedResponse({ description: 'Missing or wrong signature: nothing is processed' })
  @ApiNotFoundResponse({ description: 'The webhook is off' })
  async receiveWebhook(@Req() req: Request, @Headers('x-github-event') event: string | undefined, @Headers('x-hub-signature-256') signature: string | undefined): Promise<WebhookResponseDto> {
    // Nothing is read from an unauthenticated caller unless the webhook is on and the body may be GitHub's.
    this.webhooks.assertEnabled();
    if (Number(req.headers['content-length'] ?? 0) > MAX_WEBHOOK_BYTES) {
      req.destroy();
      throw invalid('body_too_large', `webhook bodies may be at most ${MAX_WEBHOOK_BYTES} bytes`);
    }
    return this.webhooks.receive(event, signature, await readBody(req));
  }
}

function readBody(req: Request): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_WEBHOOK_BYTES) {
        req.destroy();
        reject(invalid('body_too_large', `webhook bodies may be at most ${MAX_WEBHOOK_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
