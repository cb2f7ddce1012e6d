import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { AgentMcpController } from './agent-mcp.controller';
import { AgentMcpService } from './agent-mcp.service';

/**
 * The run's tools (register a PR, propose and act on Requirements, message related ones, the
 * conflict radar, timers), declared once for both ways they are served: by the manager at
 * `/api/agent/mcp` to each run's CLI, and on stdio by `code-factory-cli mcp`.
 */
@Module({
  controllers: [AgentMcpController],
  imports: [AgentsModule],
  providers: [AgentMcpService],
})
export class AgentToolsModule {}
