import { All, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';

import { CurrentAgentScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';
import { AgentMcpService } from './agent-mcp.service';

/**
 * `/api/agent/mcp`: the run's tools over MCP's Streamable HTTP transport, called by the agent CLI
 * itself with the run credential (no `code-factory-cli mcp` process per run). JSON-RPC, so it is
 * described in docs/architecture.md rather than in the OpenAPI document. The authentication
 * middleware has already refused a missing, unknown or ended credential (401); `CurrentAgentScope`
 * refuses the owner's token (403): the tools act for a run's own Requirement and session only.
 */
@ApiExcludeController()
@Controller('agent/mcp')
export class AgentMcpController {
  constructor(private readonly mcp: AgentMcpService) {}

  @Post()
  @HttpCode(200)
  async call(@CurrentAgentScope() scope: AgentScope, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.mcp.handle(scope, req, res);
  }

  /**
   * Stateless: there is no session to open a server-sent stream on (GET) or to end (DELETE). 405
   * is what the transport's specification asks for; clients then use POST alone.
   */
  @All()
  other(@CurrentAgentScope() _scope: AgentScope, @Res() res: Response): void {
    res.setHeader('Allow', 'POST');
    res.status(405).json({
      error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless, use POST' },
      id: null,
      jsonrpc: '2.0',
    });
  }
}
