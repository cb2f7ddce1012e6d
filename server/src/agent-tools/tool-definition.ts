import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { packageVersion } from '../core/package-info';

// The shared shape of the MCP servers (the run's tools, served by the manager at `/api/agent/mcp`
// and by `code-factory-cli mcp` on stdio; the owner's `agent-manager mcp`): tools declared once with a zod input schema and an async body that calls
// the manager's HTTP API. The server decides scope and refusals; a tool only reports them.

export interface ToolDefinition<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: Shape;
  /** True for tools that only read: clients may call them without asking. */
  readOnly?: boolean;
  /** The server's answer (printed as JSON for the model), or a thrown error whose message is the refusal. */
  run(args: z.infer<z.ZodObject<Shape>>): Promise<unknown>;
}

/** Declares a tool with its argument types inferred from the schema. */
export function defineTool<Shape extends z.ZodRawShape>(tool: ToolDefinition<Shape>): ToolDefinition<Shape> {
  return tool;
}

/**
 * What a tool's body ended with, as MCP says it: the JSON answer as text, or `isError` with the
 * message (a refusal, a bad argument, the manager unreachable). Never a thrown protocol error: the
 * model reads the message and can correct itself.
 */
export async function callTool(tool: ToolDefinition, args: unknown): Promise<CallToolResult> {
  try {
    const value = await tool.run(args as never);
    return { content: [{ text: JSON.stringify(value, null, 2), type: 'text' }] };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { content: [{ text: message, type: 'text' }], isError: true };
  }
}

export function createToolServer(name: string, instructions: string, tools: readonly ToolDefinition[]): McpServer {
  const server = new McpServer({ name, version: packageVersion() }, { instructions });
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      {
        annotations: { readOnlyHint: tool.readOnly === true },
        description: tool.description,
        inputSchema: tool.input,
        title: tool.title,
      },
      (args: unknown) => callTool(tool, args),
    );
  }
  return server;
}
