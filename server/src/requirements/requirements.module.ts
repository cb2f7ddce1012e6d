import { Module } from '@nestjs/common';

import { DependenciesRepository } from '../dependencies/dependencies.repository';
import { ModelsModule } from '../models/models.module';
import { SearchModule } from '../search/search.module';
import { RequirementsController, SessionsController } from './requirements.controller';
import { RequirementsService } from './requirements.service';
import { RequirementsRepository } from './requirements.repository';

@Module({
  controllers: [RequirementsController, SessionsController],
  // The dependencies feature's repository: every Requirement snapshot carries its rows.
  exports: [DependenciesRepository, RequirementsRepository, RequirementsService],
  imports: [ModelsModule, SearchModule],
  providers: [DependenciesRepository, RequirementsRepository, RequirementsService],
})
export class RequirementsModule {}
