import { Module } from '@nestjs/common';

import { ConversationModule } from '../conversation/conversation.module';
import { ForgesModule } from '../forges/forges.module';
import { GitHubModule } from '../github/github.module';
import { LandingModule } from '../landing/landing.module';
import { MessagesModule } from '../messages/messages.module';
import { ModelsModule } from '../models/models.module';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { ReviewCommentsModule } from '../review-comments/review-comments.module';
import { RunsModule } from '../runs/runs.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { AgentContextController } from './agent-context.controller';
import { AgentLandingService } from './agent-landing.service';
import { AgentPullRequestLookup } from './agent-pull-request-lookup.service';
import { AgentPullRequestsController } from './agent-pull-requests.controller';
import { AgentRequirementsController } from './agent-requirements.controller';
import { AgentRequirementsService } from './agent-requirements.service';
import { AgentReviewCommentsController } from './agent-review-comments.controller';

/** `/api/agent/*`: what agent runs call through `code-factory-cli`, with their run credential. */
@Module({
  controllers: [
    AgentContextController,
    AgentPullRequestsController,
    AgentRequirementsController,
    AgentReviewCommentsController,
  ],
  imports: [
    ConversationModule,
    ForgesModule,
    GitHubModule,
    LandingModule,
    MessagesModule,
    ModelsModule,
    PullRequestsModule,
    RequirementsModule,
    ReviewCommentsModule,
    RunsModule,
    WorktreesModule,
  ],
  providers: [AgentLandingService, AgentPullRequestLookup, AgentRequirementsService],
})
export class AgentApiModule {}
