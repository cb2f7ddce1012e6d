import { Inject, Module, OnModuleInit } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, type Runtime } from '../core/runtime';
import { ForgesModule } from '../forges/forges.module';
import { ForgeRegistry } from '../forges/pull-request-forge';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { GITLAB_CLIENT, GitLabClient, createGitLabClient } from './gitlab-client';
import { GitLabWebhookController } from './gitlab-webhook.controller';
import { GitLabWebhookService } from './gitlab-webhook.service';

/**
 * GitLab as a forge (issue 49 §5): the client (token from GITLAB_TOKEN or glab's login for the
 * host of `gitlabApiUrl`), registered for the PR reconciler, and the webhook.
 */
@Module({
  controllers: [GitLabWebhookController],
  exports: [GITLAB_CLIENT, GitLabWebhookService],
  imports: [ForgesModule, PullRequestsModule],
  providers: [
    {
      inject: [ConfigurationService, RUNTIME],
      provide: GITLAB_CLIENT,
      useFactory: (configuration: ConfigurationService, runtime: Runtime) =>
        createGitLabClient({ baseUrl: configuration.get('gitlabApiUrl'), env: runtime.env }),
    },
    GitLabWebhookService,
  ],
})
export class GitLabModule implements OnModuleInit {
  constructor(
    @Inject(GITLAB_CLIENT) private readonly gitlab: GitLabClient,
    private readonly forges: ForgeRegistry,
  ) {}

  onModuleInit(): void {
    this.forges.register(this.gitlab);
  }
}
