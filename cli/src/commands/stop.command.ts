import { Command, CommandRunner, Option } from 'nest-commander';

import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { stopDaemon } from '../daemon/daemon-control';
import { UsageError, parseIntegerOption } from '../options';

export const DEFAULT_STOP_TIMEOUT_SECONDS = 60;

interface StopFlags {
  workspace?: string;
  timeout?: number;
}

@Command({
  description: "Stop a workspace's Agent Manager gracefully (and its supervisor), and wait until both have exited",
  name: 'stop',
})
export class StopCommand extends CommandRunner {
  async run(_params: string[], flags: StopFlags): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const { stopped } = await stopDaemon(paths, (flags.timeout ?? DEFAULT_STOP_TIMEOUT_SECONDS) * 1000);
    if (stopped.length === 0) {
      // Nothing to stop is what was asked for: not an error, so scripts can stop unconditionally.
      process.stdout.write(`Agent Manager is not running for ${paths.root}\n`);
      return;
    }
    process.stdout.write(
      `Agent Manager stopped for ${paths.root} (${stopped.map((p) => `${p.what} pid ${p.pid}`).join(', ')})\n`,
    );
  }

  @Option({
    description: 'Repository whose Agent Manager to stop (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({
    description: `Seconds to wait for the graceful stop (default ${DEFAULT_STOP_TIMEOUT_SECONDS})`,
    flags: '--timeout <seconds>',
  })
  parseTimeout(value: string): number {
    return parseIntegerOption('--timeout', value, 1, 86_400);
  }
}
