import { Command, CommandRunner, Option } from 'nest-commander';

import { codeFactoryHome, resolveWorkspace } from '@server/core/workspace/workspace';

import { inspectDaemon, lastLaunch, startDetached, stopDaemon } from '../daemon/daemon-control';
import { formatDetachedStart, terminalLoginUrl } from '../daemon/daemon-format';
import { UsageError, parseIntegerOption } from '../options';
import { DETACHED_START_TIMEOUT_MS } from './start.command';
import { DEFAULT_STOP_TIMEOUT_SECONDS } from './stop.command';

interface RestartFlags {
  workspace?: string;
  timeout?: number;
}

@Command({
  description:
    "Stop a workspace's Agent Manager and start it again in the background, with the arguments of its last `start --detach`",
  name: 'restart',
})
export class RestartCommand extends CommandRunner {
  async run(_params: string[], flags: RestartFlags): Promise<void> {
    let paths;
    try {
      paths = resolveWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    // Read before the stop: the state file names the arguments the manager was started with.
    const launch = lastLaunch(paths, inspectDaemon(paths).state);
    await stopDaemon(paths, (flags.timeout ?? DEFAULT_STOP_TIMEOUT_SECONDS) * 1000);
    const started = await startDetached(paths, launch, DETACHED_START_TIMEOUT_MS);
    process.stdout.write(formatDetachedStart(started, terminalLoginUrl(paths, started.state.url)));
  }

  @Option({
    description: 'Repository whose Agent Manager to restart (default: the current directory)',
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
