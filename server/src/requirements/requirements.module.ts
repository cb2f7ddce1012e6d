import { Module } from '@nestjs/common';

import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RequirementsRepository } from './requirements.repository';

@Module({
  controllers: [RequirementsController, SessionsController],
  exports: [RequirementsRepository, RequirementsService],
  providers: [RequirementsRepository, RequirementsService],
})
export class RequirementsModule {}
