import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { NetworkController } from './network.controller';
import { NetworkRepository } from './network.repository';
import { NetworkService } from './network.service';

/** Each agent run's network of its own: the egress proxy per run, the allow-lists, what was blocked (issue 45). */
@Module({
  controllers: [NetworkController],
  exports: [NetworkService],
  imports: [AgentsModule, RequirementsModule],
  providers: [NetworkRepository, NetworkService],
})
export class NetworkModule {}
