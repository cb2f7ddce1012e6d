import { Command, CommandRunner, Option } from 'nest-commander';

import { parseIntegerOption } from '../options';

interface DoctorFlags {
  workspace?: string;
  host?: string;
  port?: number;
  json?: boolean;
  clean?: boolean;
}

@Command({
  description:
    'Check what a first run needs (Node, git, the agent CLIs and their logins, a GitHub token, isolation, the port, the data directory) and how to fix each miss',
  name: 'doctor',
})
export class DoctorCommand extends CommandRunner {
  async run(_params: string[], flags: DoctorFlags): Promise<void> {
    if (flags.clean && !(await this.clean(flags.workspace ?? process.cwd(), flags.json === true))) {
      process.exitCode = 1;
      return;
    }
    // Every check's module, loaded when the checks run.
    const { runDoctor } = await import('@server/doctor/doctor-checks');
    const { formatDoctorReport } = await import('@server/doctor/doctor-report');
    const report = await runDoctor({
      overrides: {
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        ...(flags.port !== undefined ? { port: flags.port } : {}),
      },
      workspace: flags.workspace ?? process.cwd(),
    });
    process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
    // A required check failed: scripts (and CI) see it in the exit code.
    process.exitCode = report.ok ? 0 : 1;
  }

  /**
   * The workspace's prepared worktrees (issue 48 §6) go, with their list: only while no manager
   * runs for it (a running one may be handing one out; `worktreePool: 0` empties it then).
   */
  private async clean(workspace: string, json: boolean): Promise<boolean> {
    const { locateWorkspace } = await import('@server/core/workspace/workspace');
    const { runningInstance } = await import('@server/core/workspace/instance-lock');
    const { emptyPool } = await import('@server/worktrees/worktree-pool-manifest');
    let paths: ReturnType<typeof locateWorkspace>;
    try {
      paths = locateWorkspace(workspace);
    } catch (err) {
      process.stderr.write(`agent-manager doctor --clean: ${(err as Error).message}\n`);
      return false;
    }
    const running = runningInstance(paths.lockPath);
    if (running !== null) {
      process.stderr.write(
        `agent-manager doctor --clean: Agent Manager runs for ${paths.root} (pid ${running.pid}); stop it first, or set worktreePool to 0, which empties the pool at once\n`,
      );
      return false;
    }
    const removed = await emptyPool(paths.dataDirectory);
    // With --json, stdout holds the report alone.
    (json ? process.stderr : process.stdout).write(
      removed.length === 0
        ? 'No prepared worktrees to remove.\n'
        : `Removed ${removed.length} prepared worktree${removed.length === 1 ? '' : 's'}:\n${removed.map((where) => `  ${where}\n`).join('')}`,
    );
    return true;
  }

  @Option({
    description: 'Remove the prepared worktrees (worktreePool) first; Agent Manager must be stopped',
    flags: '--clean',
  })
  parseClean(): boolean {
    return true;
  }

  @Option({ description: 'Repository to check for (default: the current directory)', flags: '-w, --workspace <dir>' })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({
    description: 'Interface `start` would listen on (default: from the configuration)',
    flags: '--host <host>',
  })
  parseHost(value: string): string {
    return value;
  }

  @Option({ description: 'Port `start` would listen on (default: from the configuration)', flags: '-p, --port <port>' })
  parsePort(value: string): number {
    return parseIntegerOption('--port', value, 0, 65535);
  }

  @Option({ description: 'Print the findings as JSON', flags: '--json' })
  parseJson(): boolean {
    return true;
  }
}
