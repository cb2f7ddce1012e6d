import { Module } from '@nestjs/common';

import { DependenciesRepository } from '../dependencies/dependencies.repository';
import { ModelsModule } from '../models/models.module';
import { SearchModule } from '../search/search.module';
import { RequirementLifecycle } from './requirement-lifecycle';
import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RequirementsRepository } from './requirements.repository';

@Module({
  controllers: [RequirementsController, SessionsController],
  // The dependencies feature's repository: every Requirement snapshot carries its rows. The
  // Requirement's own repository stays inside: other features read through RequirementsService
  // and change the aggregate through RequirementLifecycle's intents.
  exports: [DependenciesRepository, RequirementLifecycle, RequirementsService],
  imports: [ModelsModule, SearchModule],
  providers: [DependenciesRepository, RequirementLifecycle, RequirementsRepository, RequirementsService],
})
export class RequirementsModule {}
