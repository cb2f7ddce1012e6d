import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations, PREVIEW_WAIT_MAX_SECONDS } from '@server/agent-tools/agent-operations';
import { printJson } from '@server/agent-tools/manager-api';
import { UsageError, parseIntegerOption } from '../../options';

@SubCommand({
  description:
    "Start (or restart) the current Requirement's preview: the run script in your working copy, on AGENT_MANAGER_PORT",
  name: 'start',
})
export class PreviewStartCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: { wait?: number }): Promise<void> {
    printJson(await this.operations.startPreview(flags.wait ?? 0));
  }

  @Option({
    description: `Wait up to N seconds for it to be ready or to have exited (0–${PREVIEW_WAIT_MAX_SECONDS})`,
    flags: '--wait <seconds>',
  })
  parseWait(value: string): number {
    return parseIntegerOption('--wait', value, 0, PREVIEW_WAIT_MAX_SECONDS);
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli preview start --wait 60
  curl "$(code-factory-cli preview status | node -p 'JSON.parse(require("fs").readFileSync(0)).url')"

It runs the person's run script (runCommand, or .agent-manager/run as the base branch has it) in
your working copy and sandbox. curl and most HTTP clients reach its url through your proxy.
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({
  description: "The current Requirement's preview: state, url, ports, exit code and last lines",
  name: 'status',
})
export class PreviewStatusCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.operations.previewStatus());
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli preview status
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({ description: "The current Requirement's preview output (at most its last 5,000 lines)", name: 'output' })
export class PreviewOutputCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: { lines?: number }): Promise<void> {
    printJson(await this.operations.previewOutput(flags.lines));
  }

  @Option({ description: 'Only the last N lines (1–5000)', flags: '--lines <n>' })
  parseLines(value: string): number {
    return parseIntegerOption('--lines', value, 1, 5000);
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli preview output --lines 50
${ENVIRONMENT_HELP}`;
  }
}

@Command({
  description: "The current Requirement's preview, its app running from your working copy: start, status, output",
  name: 'preview',
  subCommands: [PreviewStartCommand, PreviewStatusCommand, PreviewOutputCommand],
})
export class PreviewCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: preview start | status | output (see --help)');
  }
}
