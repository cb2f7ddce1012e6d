import { Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import type { AgentScope } from '../auth/run-credentials.service';
import { AgentOperations } from './agent-operations';
import { ManagerApi } from './manager-api';

/** The run credential as the authentication middleware accepted it (`Bearer amr_…`). */
const BEARER = /^Bearer ([A-Za-z0-9_]{1,200})$/;
/** What one tool's call to the agent API may take, as `code-factory-cli`'s default. */
const CALL_TIMEOUT_MS = 30_000;

/**
 * The MCP SDK, zod and the tools' schemas, loaded at the first MCP request rather than at start:
 * some 250 modules every manager start would load for an endpoint many runs never call.
 */
async function loadToolkit() {
  const [{ StreamableHTTPServerTransport }, { AGENT_TOOLS_INSTRUCTIONS, agentTools }, { createToolServer }] =
    await Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('./agent-tools'),
      import('./tool-definition'),
    ]);
  return { AGENT_TOOLS_INSTRUCTIONS, StreamableHTTPServerTransport, agentTools, createToolServer };
}

/** A JSON-RPC error answer in the transport's own shape (`id: null`: the request was not read as one). */
function refuse(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ error: { code, message }, id: null, jsonrpc: '2.0' });
}

/**
 * Serves one MCP request of one run, statelessly: a fresh server and transport per POST (the
 * SDK's stateless mode), holding the run's tools bound to its scope. The tools are those of
 * `code-factory-cli mcp` (agent-tools.ts), and each calls the agent API over loopback with the
 * credential this request presented: every refusal, scope check and limit of the endpoint the
 * matching `code-factory-cli` command calls applies unchanged, and a credential revoked when the
 * run ends stops its tools at once.
 */
@Injectable()
export class AgentMcpService {
  private readonly logger = new Logger('AgentMcp');
  private toolkit: ReturnType<typeof loadToolkit> | null = null;

  constructor(private readonly environment: AgentEnvironmentService) {}

  /** The toolkit, loaded once; a failed load is forgotten, so the next request tries again. */
  private loadedToolkit(): ReturnType<typeof loadToolkit> {
    this.toolkit ??= loadToolkit().catch((err: unknown) => {
      this.toolkit = null;
      throw err;
    });
    return this.toolkit;
  }

  async handle(scope: AgentScope, req: Request, res: Response): Promise<void> {
    if (!req.is(['application/json', 'application/*+json'])) {
      refuse(res, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
      return;
    }
    // One JSON-RPC message per request: a batch (up to 100 in the SDK) would be as many agent API
    // calls for one request's worth of limits. MCP 2025-06-18 dropped batches; no client sends them.
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      refuse(
        res,
        400,
        -32600,
        'Invalid Request: the body must be one JSON-RPC message (an object; batches are not accepted)',
      );
      return;
    }
    const token = BEARER.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const api = ManagerApi.forContext({
      apiUrl: this.environment.apiUrl,
      requirementId: scope.requirementId,
      sessionId: scope.sessionId,
      timeoutMs: CALL_TIMEOUT_MS,
      token,
    });
    let toolkit;
    try {
      toolkit = await this.loadedToolkit();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, msg: 'MCP tools could not be loaded', runId: scope.runId });
      refuse(res, 500, -32603, 'Internal error');
      return;
    }
    if (res.writableEnded || res.destroyed) {
      return; // the client hung up while the tools loaded
    }
    const { AGENT_TOOLS_INSTRUCTIONS, StreamableHTTPServerTransport, agentTools, createToolServer } = toolkit;
    const server = createToolServer('agent-manager', AGENT_TOOLS_INSTRUCTIONS, agentTools(new AgentOperations(api)));
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true, sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, msg: 'MCP request failed', runId: scope.runId });
      if (!res.headersSent) {
        refuse(res, 500, -32603, 'Internal error');
      }
    }
  }
}
