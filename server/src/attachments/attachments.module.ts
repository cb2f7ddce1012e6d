import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { AttachmentsController } from './attachments.controller';
import { AttachmentsRepository } from './attachments.repository';
import { AttachmentsService } from './attachments.service';

@Module({
  controllers: [AttachmentsController],
  exports: [AttachmentsRepository, AttachmentsService],
  imports: [RequirementsModule],
  providers: [AttachmentsRepository, AttachmentsService],
})
export class AttachmentsModule {}
