import { Module } from '@nestjs/common';

import { AttachmentsController } from './attachments.controller';
import { AttachmentsService } from './attachments.service';

@Module({
  controllers: [AttachmentsController],
  exports: [AttachmentsService],
  providers: [AttachmentsService],
})
export class AttachmentsModule {}
