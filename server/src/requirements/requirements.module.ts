import { Module } from '@nestjs/common';

import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RetentionService } from './retention.service';

@Module({
  controllers: [RequirementsController, SessionsController],
  exports: [RequirementsService],
  providers: [RequirementsService, RetentionService],
})
export class RequirementsModule {}
