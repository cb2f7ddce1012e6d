import { Module } from '@nestjs/common';

import { ConversationModule } from '../conversation/conversation.module';
import { MessagesModule } from '../messages/messages.module';
import { RunsModule } from '../runs/runs.module';
import { TriggerDeliveryService } from './trigger-delivery.service';
import { TriggerReceiptsRepository } from './trigger-receipts.repository';

/** The delivery path every AgentTrigger (timers, GitHub) hands its occurrences to. */
@Module({
  exports: [TriggerDeliveryService],
  imports: [ConversationModule, MessagesModule, RunsModule],
  providers: [TriggerDeliveryService, TriggerReceiptsRepository],
})
export class TriggersModule {}
