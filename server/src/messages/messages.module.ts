import { Module } from '@nestjs/common';

import { AttachmentsModule } from '../attachments/attachments.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { MessagesService } from './messages.service';

/** The conversation store. Its HTTP routes live in ConversationModule, which also needs `runs`. */
@Module({
  exports: [MessagesService],
  imports: [AttachmentsModule, RequirementsModule],
  providers: [MessagesService],
})
export class MessagesModule {}
