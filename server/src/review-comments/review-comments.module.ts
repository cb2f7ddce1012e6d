import { Module } from '@nestjs/common';

import { ConversationModule } from '../conversation/conversation.module';
import { MessagesModule } from '../messages/messages.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { ReviewAnchors } from './review-anchors.service';
import { ReviewCommentsController } from './review-comments.controller';
import { ReviewCommentsRepository } from './review-comments.repository';
import { ReviewCommentsService } from './review-comments.service';
import { ViewedFiles } from './viewed-files.service';

/**
 * A person's review of a Requirement's changes (issue 46): line comments drafted, sent as one
 * message through the conversation, answered by the agent through its API, and moved with the
 * code at each import of the agent's work (a reaction to its `requirement.updated`).
 */
@Module({
  controllers: [ReviewCommentsController],
  exports: [ReviewCommentsService],
  imports: [ConversationModule, MessagesModule, RequirementsModule, WorktreesModule],
  providers: [ReviewAnchors, ReviewCommentsRepository, ReviewCommentsService, ViewedFiles],
})
export class ReviewCommentsModule {}
