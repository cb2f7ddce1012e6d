import { Module } from '@nestjs/common';

import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';

@Module({
  controllers: [RequirementsController, SessionsController],
  exports: [RequirementsService],
  providers: [RequirementsService],
})
export class RequirementsModule {}
