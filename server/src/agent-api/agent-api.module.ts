import { Module } from '@nestjs/common';

import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { AgentContextController } from './agent-context.controller';
import { AgentPullRequestsController } from './agent-pull-requests.controller';

/** `/api/agent/*`: what agent runs call through `code-factory-cli`, with their run credential. */
@Module({ controllers: [AgentContextController, AgentPullRequestsController], imports: [PullRequestsModule] })
export class AgentApiModule {}
