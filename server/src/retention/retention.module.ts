import { Module } from '@nestjs/common';

import { AttachmentsModule } from '../attachments/attachments.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RetentionService } from './retention.service';

/** Purges terminal Requirements past their retention, with everything they own. */
@Module({
  exports: [RetentionService],
  imports: [AttachmentsModule, RequirementsModule],
  providers: [RetentionService],
})
export class RetentionModule {}
