import { Module } from '@nestjs/common';

import { DependenciesRepository } from './dependencies.repository';
import { ModelsModule } from '../models/models.module';
import { SearchModule } from '../search/search.module';
import { RequirementLifecycle } from './requirement-lifecycle';
import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RequirementsRepository } from './requirements.repository';

@Module({
  controllers: [RequirementsController, SessionsController],
  // The repositories stay inside: other features read through RequirementsService and change the
  // aggregate (its rows, its session, what it waits for) through RequirementLifecycle's intents.
  exports: [RequirementLifecycle, RequirementsService],
  imports: [ModelsModule, SearchModule],
  providers: [DependenciesRepository, RequirementLifecycle, RequirementsRepository, RequirementsService],
})
export class RequirementsModule {}
