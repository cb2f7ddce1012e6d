import { Module } from '@nestjs/common';

import { AgentEnvironmentService } from './agent-environment.service';
import { AgentSandbox } from './agent-sandbox';
import { RunLimits } from './run-limits';

/** What every agent process is started with, whoever starts it (RD runs, reviewers). */
@Module({
  exports: [AgentEnvironmentService, AgentSandbox, RunLimits],
  providers: [AgentEnvironmentService, AgentSandbox, RunLimits],
})
export class AgentsModule {}
