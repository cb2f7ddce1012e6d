import { Module } from '@nestjs/common';

import { AttachmentsModule } from '../attachments/attachments.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { SearchModule } from '../search/search.module';
import { MessagesRepository } from './messages.repository';
import { MessagesService } from './messages.service';

/** The conversation store. Its HTTP routes live in ConversationModule, which also needs `runs`. */
@Module({
  exports: [MessagesRepository, MessagesService],
  imports: [AttachmentsModule, RequirementsModule, SearchModule],
  providers: [MessagesRepository, MessagesService],
})
export class MessagesModule {}
