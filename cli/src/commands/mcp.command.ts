import { Command, CommandRunner, Help, Option } from 'nest-commander';

import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { UsageError } from '../options';
import { OwnerApi } from '../owner/owner-api';

const INSTRUCTIONS =
  "Agent Manager's tools for its owner: list, read and create Requirements, reply to their agents, start, interrupt and confirm them, list pull requests and request AI reviews, list timers. They act as the owner of one workspace's running Agent Manager; when none runs, every tool says so.";

@Command({
  description:
    "Serve the owner's Agent Manager tools over MCP (stdio) for your own assistant (Claude Code, Codex, Cursor…)",
  name: 'mcp',
})
export class OwnerMcpCommand extends CommandRunner {
  async run(_params: string[], flags: { workspace?: string }): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    // The MCP SDK and the tools' schemas, loaded by the one command that serves them.
    const { createToolServer } = await import('@server/agent-tools/tool-definition');
    const { serveStdio } = await import('../mcp/tool-server');
    const { ownerTools } = await import('../owner/owner-tools');
    await serveStdio(createToolServer('agent-manager', INSTRUCTIONS, ownerTools(new OwnerApi(paths))));
  }

  @Option({
    description: 'Repository whose running Agent Manager to talk to (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Help('after')
  examples(): string {
    return `
A Model Context Protocol server on stdin/stdout. It finds the running Agent Manager of the
workspace through its lock file and acts with its local token, as you. Set it up once:

  claude mcp add agent-manager -- agent-manager mcp --workspace /path/to/repo
  codex mcp add agent-manager -- agent-manager mcp --workspace /path/to/repo`;
  }
}
