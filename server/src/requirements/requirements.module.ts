import { Module } from '@nestjs/common';

import { SearchModule } from '../search/search.module';
import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RequirementsRepository } from './requirements.repository';

@Module({
  controllers: [RequirementsController, SessionsController],
  exports: [RequirementsRepository, RequirementsService],
  imports: [SearchModule],
  providers: [RequirementsRepository, RequirementsService],
})
export class RequirementsModule {}
