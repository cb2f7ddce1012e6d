import { Module } from '@nestjs/common';

import { ConfigurationController } from './configuration.controller';
import { ManagerConfigurationService } from './manager-configuration.service';

@Module({
  controllers: [ConfigurationController],
  providers: [ManagerConfigurationService],
})
export class ConfigurationModule {}
