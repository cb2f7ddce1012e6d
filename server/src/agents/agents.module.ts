import { Module } from '@nestjs/common';

import { AgentEnvironmentService } from './agent-environment.service';
import { AgentSandbox } from './agent-sandbox';

/** What every agent process is started with, whoever starts it (RD runs, reviewers). */
@Module({
  exports: [AgentEnvironmentService, AgentSandbox],
  providers: [AgentEnvironmentService, AgentSandbox],
})
export class AgentsModule {}
