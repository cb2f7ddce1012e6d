import { Inject, Module, OnModuleInit } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, type Runtime } from '../core/runtime';
import { ForgesModule } from '../forges/forges.module';
import { type ForgeClient, ForgeRegistry } from '../forges/pull-request-forge';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { GITHUB_CLIENT, type GitHubClient, createGitHubClient } from './github-client';
import { GitHubWebhookController } from './github-webhook.controller';
import { GitHubWebhookService } from './github-webhook.service';

/** The permissions whose labels count for intake (see IssueForge.intakeLabeler). */
const TRIAGERS: ReadonlySet<string> = new Set(['admin', 'maintain', 'write', 'triage']);

/** GitHub as a forge: its client, read through the interfaces every forge shares (`owner/repo` split here). */
export function gitHubForge(github: GitHubClient): ForgeClient {
  const split = (repository: string) => repository.split('/') as [string, string];
  return {
    closeIssue: (repository, number) => github.closeIssue(...split(repository), number),
    commentOnIssue: (repository, number, body) => github.commentOnIssue(...split(repository), number, body),
    get configured() {
      return github.configured;
    },
    budget: () => {
      const core = github.configured ? github.rateLimit().core : null;
      return core && { remaining: core.remaining, resetAt: core.resetAt };
    },
    fetchPullRequestSummaries: (refs) => github.fetchPullRequestSummaries(refs),
    fetchPullRequests: (refs) => github.fetchPullRequests(refs),
    getIssue: (repository, number) => github.getIssue(...split(repository), number),
    // A label counts when whoever put it there may triage the repository and is no bot.
    intakeLabeler: async (repository, number, labels, trustedCache) => {
      const login = await github.lastLabeledBy(...split(repository), number, labels);
      if (login === null || login.endsWith('[bot]')) {
        return { login, trusted: false };
      }
      if (!trustedCache.has(login)) {
        trustedCache.set(login, TRIAGERS.has(await github.permissionOf(...split(repository), login)));
      }
      return { login, trusted: trustedCache.get(login) === true };
    },
    kind: 'github',
    // GitHub lists a whole repository's comments in one read: each caller picks its issues' own.
    listCommentsSince: (repository, _numbers, since, max) =>
      github.listRepositoryCommentsSince(...split(repository), since, max),
    listIssueComments: (repository, number, max) => github.listIssueComments(...split(repository), number, max),
    listIssueCommentsSince: (repository, number, since, max) =>
      github.listIssueCommentsSince(...split(repository), number, since, max),
    listIssues: (repository, query) => github.listIssues(...split(repository), query),
    listIssuesUpdatedSince: (repository, since, page) =>
      github.listIssuesUpdatedSince(...split(repository), since, page),
    login: () => github.login(),
    lookUpPullRequest: (repository, number) => github.getPullRequest(...split(repository), number),
  };
}

/** GitHub: the client (token from GITHUB_TOKEN, GH_TOKEN or `gh`), registered as a forge, and the webhook. */
@Module({
  controllers: [GitHubWebhookController],
  exports: [GITHUB_CLIENT, GitHubWebhookService],
  imports: [ForgesModule, PullRequestsModule],
  providers: [
    {
      inject: [ConfigurationService, RUNTIME],
      provide: GITHUB_CLIENT,
      useFactory: (configuration: ConfigurationService, runtime: Runtime) =>
        createGitHubClient({ baseUrl: configuration.get('githubApiUrl'), env: runtime.env }),
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
