import { Inject, Module, OnModuleInit } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { ForgesModule } from '../forges/forges.module';
import { ForgeRegistry, type PullRequestForge } from '../forges/pull-request-forge';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { GITHUB_CLIENT, type GitHubClient, createGitHubClient } from './github-client';
import { GitHubWebhookController } from './github-webhook.controller';
import { GitHubWebhookService } from './github-webhook.service';

/** GitHub as the PR reconciler's forge: its client, read through the PR interface every forge shares. */
export function gitHubForge(github: GitHubClient): PullRequestForge {
  return {
    get configured() {
      return github.configured;
    },
    fetchPullRequestSummaries: (refs) => github.fetchPullRequestSummaries(refs),
    fetchPullRequests: (refs) => github.fetchPullRequests(refs),
    kind: 'github',
    lookUpPullRequest: (repository, number) => {
      const [owner, repo] = repository.split('/') as [string, string];
      return github.getPullRequest(owner, repo, number);
    },
  };
}

/** GitHub: the client (token from GITHUB_TOKEN, GH_TOKEN or `gh`), registered as a forge, and the webhook. */
@Module({
  controllers: [GitHubWebhookController],
  exports: [GITHUB_CLIENT, GitHubWebhookService],
  imports: [ForgesModule, PullRequestsModule],
  providers: [
    {
      inject: [ConfigurationService],
      provide: GITHUB_CLIENT,
      useFactory: (configuration: ConfigurationService) =>
        createGitHubClient({ baseUrl: configuration.get('githubApiUrl') }),
    },
    GitHubWebhookService,
  ],
})
export class GitHubModule implements OnModuleInit {
  constructor(
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    private readonly forges: ForgeRegistry,
  ) {}

  onModuleInit(): void {
    this.forges.register(gitHubForge(this.github));
  }
}
