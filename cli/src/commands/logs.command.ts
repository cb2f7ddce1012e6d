import * as fs from 'node:fs';

import { Command, CommandRunner, Option } from 'nest-commander';

import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { daemonLogPath } from '../daemon/daemon-control';
import { followLog, tailLog } from '../daemon/daemon-log';
import { UsageError, parseIntegerOption } from '../options';

const DEFAULT_LINES = 200;

interface LogsFlags {
  workspace?: string;
  follow?: boolean;
  lines?: number;
}

@Command({
  description:
    "Print the log of a workspace's background Agent Manager (its output and its supervisor's); -f follows it",
  name: 'logs',
})
export class LogsCommand extends CommandRunner {
  async run(_params: string[], flags: LogsFlags): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const logPath = daemonLogPath(paths);
    if (!fs.existsSync(logPath) && !flags.follow) {
      throw new UsageError(
        `no log at ${logPath}: Agent Manager has not run in the background for ${paths.root} (\`agent-manager start --detach\`)`,
      );
    }
    const { liveBytes, text } = tailLog(logPath, flags.lines ?? DEFAULT_LINES);
    process.stdout.write(text);
    if (!flags.follow) {
      return;
    }
    // Following ends with the reader: Ctrl+C, a closed pipe (`logs -f | head`), SIGTERM.
    const stop = new AbortController();
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => stop.abort());
    }
    process.stdout.on('error', () => stop.abort());
    await followLog(logPath, liveBytes, (chunk) => process.stdout.write(chunk), stop.signal);
  }

  @Option({
    description: 'Repository whose log to print (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({ description: 'Keep printing what is appended, across rotations, until interrupted', flags: '-f, --follow' })
  parseFollow(): boolean {
    return true;
  }

  @Option({ description: `Lines to print first (default ${DEFAULT_LINES}; 0 for all)`, flags: '-n, --lines <count>' })
  parseLines(value: string): number {
    return parseIntegerOption('--lines', value, 0, 10_000_000);
  }
}
