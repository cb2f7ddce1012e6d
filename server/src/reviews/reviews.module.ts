import { Module } from '@nestjs/common';

import { ConversationModule } from '../conversation/conversation.module';
import { MessagesModule } from '../messages/messages.module';
import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { TriggersModule } from '../triggers/triggers.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { ReviewLoopService } from './review-loop.service';
import { ReviewsController } from './reviews.controller';
import { ReviewsRepository } from './reviews.repository';
import { ReviewsService } from './reviews.service';

@Module({
  controllers: [ReviewsController],
  exports: [ReviewsService],
  imports: [
    ConversationModule,
    MessagesModule,
    PullRequestsModule,
    RequirementsModule,
    RunsModule,
    TriggersModule,
    WorktreesModule,
  ],
  providers: [ReviewLoopService, ReviewsRepository, ReviewsService],
})
export class ReviewsModule {}
