import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { AttachmentsController } from './attachments.controller';
import { AttachmentsService } from './attachments.service';

@Module({
  controllers: [AttachmentsController],
  exports: [AttachmentsService],
  imports: [RequirementsModule],
  providers: [AttachmentsService],
})
export class AttachmentsModule {}
