import { Module } from '@nestjs/common';

import { AgentSandbox } from './agent-sandbox';

/** What every agent process is started with, whoever starts it (RD runs, reviewers). */
@Module({
  exports: [AgentSandbox],
  providers: [AgentSandbox],
})
export class AgentsModule {}
