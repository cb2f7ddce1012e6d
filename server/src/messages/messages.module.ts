import { Module } from '@nestjs/common';

import { AttachmentsModule } from '../attachments/attachments.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { MessagesController } from './messages.controller';
import { MessagesService } from './messages.service';

@Module({
  controllers: [MessagesController],
  exports: [MessagesService],
  imports: [AttachmentsModule, RequirementsModule],
  providers: [MessagesService],
})
export class MessagesModule {}
