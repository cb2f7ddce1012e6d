import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { ConfigurationController } from './configuration.controller';
import { EventsModule } from '../events/events.module';
import { RunsModule } from '../runs/runs.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { ManagerConfigurationService } from './manager-configuration.service';
import { MetricsService } from './metrics.service';

@Module({
  controllers: [ConfigurationController],
  imports: [AgentsModule, EventsModule, RunsModule, WorktreesModule],
  providers: [ManagerConfigurationService, MetricsService],
})
export class ConfigurationModule {}
