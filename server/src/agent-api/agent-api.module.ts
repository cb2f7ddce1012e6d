import { Module } from '@nestjs/common';

import { AgentContextController } from './agent-context.controller';

/** `/api/agent/*`: what agent runs call through `code-factory-cli`, with their run credential. */
@Module({ controllers: [AgentContextController] })
export class AgentApiModule {}
