import { Module } from '@nestjs/common';

import { GitHubModule } from '../github/github.module';
import { GitLabModule } from '../gitlab/gitlab.module';
import { MessagesModule } from '../messages/messages.module';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { TriggersModule } from '../triggers/triggers.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { ConflictRadar } from './conflict-radar.service';
import { LandingController } from './landing.controller';
import { LandingPullRequests } from './landing-pull-requests.service';
import { LandingQueueService } from './landing-queue.service';
import { LandingRepository } from './landing.repository';
import { LandingService } from './landing.service';

/**
 * Landing a Requirement's work (issue 28): local lands and pull requests, the conflict radar
 * across every live Requirement, and the merge queue. Owns `requirement_landing` and `landing_queue`.
 */
@Module({
  controllers: [LandingController],
  exports: [ConflictRadar, LandingQueueService, LandingService],
  imports: [
    GitHubModule,
    GitLabModule,
    MessagesModule,
    PullRequestsModule,
    RequirementsModule,
    TriggersModule,
    WorktreesModule,
  ],
  providers: [ConflictRadar, LandingPullRequests, LandingQueueService, LandingRepository, LandingService],
})
export class LandingModule {}
