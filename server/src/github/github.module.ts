import { Module } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { TriggersModule } from '../triggers/triggers.module';
import { GITHUB_CLIENT, createGitHubClient } from './github-client';
import { GitHubWebhookController } from './github-webhook.controller';
import { GitHubWebhookService } from './github-webhook.service';
import { PullRequestReconciler } from './pull-request-reconciler.service';

/** GitHub: the client (token from GITHUB_TOKEN, GH_TOKEN or `gh`), the PR reconciler and its triggers, the webhook. */
@Module({
  controllers: [GitHubWebhookController],
  exports: [GITHUB_CLIENT, GitHubWebhookService, PullRequestReconciler],
  imports: [PullRequestsModule, TriggersModule],
  providers: [
    {
      inject: [ConfigurationService],
      provide: GITHUB_CLIENT,
      useFactory: (configuration: ConfigurationService) =>
        createGitHubClient({ baseUrl: configuration.get('githubApiUrl') }),
    },
    GitHubWebhookService,
    PullRequestReconciler,
  ],
})
export class GitHubModule {}
