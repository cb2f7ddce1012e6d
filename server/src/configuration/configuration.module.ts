import { Module } from '@nestjs/common';

import { ConfigurationController } from './configuration.controller';
import { EventsModule } from '../events/events.module';
import { RunsModule } from '../runs/runs.module';
import { ManagerConfigurationService } from './manager-configuration.service';
import { MetricsService } from './metrics.service';

@Module({
  controllers: [ConfigurationController],
  imports: [EventsModule, RunsModule],
  providers: [ManagerConfigurationService, MetricsService],
})
export class ConfigurationModule {}
