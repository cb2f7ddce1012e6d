import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { ConfigurationController } from './configuration.controller';
import { EventsModule } from '../events/events.module';
import { RunsModule } from '../runs/runs.module';
import { ManagerConfigurationService } from './manager-configuration.service';
import { MetricsService } from './metrics.service';

@Module({
  controllers: [ConfigurationController],
  imports: [AgentsModule, EventsModule, RunsModule],
  providers: [ManagerConfigurationService, MetricsService],
})
export class ConfigurationModule {}
