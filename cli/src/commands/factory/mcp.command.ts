import { Command, CommandRunner, Help } from 'nest-commander';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations } from '@server/agent-tools/agent-operations';

@Command({
  description:
    "Serve this run's Agent Manager tools over MCP (stdio), for an MCP client you configure yourself inside a run",
  name: 'mcp',
})
export class AgentMcpCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    // Without the run's context no tool could work: say so at start, where the CLI shows it.
    this.operations.checkContext();
    // The MCP SDK and the tools' schemas, loaded by the one command that serves them.
    const { AGENT_TOOLS_INSTRUCTIONS, agentTools } = await import('@server/agent-tools/agent-tools');
    const { createToolServer } = await import('@server/agent-tools/tool-definition');
    const { serveStdio } = await import('../../mcp/tool-server');
    await serveStdio(createToolServer('agent-manager', AGENT_TOOLS_INSTRUCTIONS, agentTools(this.operations)));
  }

  @Help('after')
  examples(): string {
    return `
A Model Context Protocol server on stdin/stdout with the tools register_pull_request,
propose_requirement, requirement_action, list_related, message_related, requirement_landing,
register_timer, list_timers, cancel_timer, review_comments and reply_review_comment: the same calls as the
commands of this program. Codex and
Claude Code runs already have these tools: Agent Manager serves them itself (\$CODE_FACTORY_API_URL/agent/mcp,
MCP over HTTP with the run credential as Bearer). Use this for another MCP client inside a run.
${ENVIRONMENT_HELP}`;
  }
}
