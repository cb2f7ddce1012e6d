import { Module } from '@nestjs/common';

import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { TriggersModule } from '../triggers/triggers.module';
import { DependenciesController } from './dependencies.controller';
import { DependenciesService } from './dependencies.service';

/**
 * Requirements that wait for others. Its repository is provided by RequirementsModule (every
 * Requirement snapshot carries the rows); this module owns the rules and the deliveries.
 */
@Module({
  controllers: [DependenciesController],
  imports: [PullRequestsModule, RequirementsModule, RunsModule, TriggersModule],
  providers: [DependenciesService],
})
export class DependenciesModule {}
