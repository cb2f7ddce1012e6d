import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { ConversationDelivery } from './conversation-delivery.service';
import { MessagesController } from './messages.controller';
import { MessagesModule } from '../messages/messages.module';

/**
 * The conversation: a person's (or a trigger's, a reviewer's, an agent's) message delivered to a
 * Requirement, which appends it and may wake the session (ConversationDelivery), and the messages'
 * HTTP surface. It sits above `messages` (the conversation store, which runs also append to) and
 * `runs` (which it wakes), so neither depends on the other both ways.
 */
@Module({
  controllers: [MessagesController],
  exports: [ConversationDelivery],
  imports: [MessagesModule, RequirementsModule, RunsModule],
  providers: [ConversationDelivery],
})
export class ConversationModule {}
