import { Command, CommandRunner, Option } from 'nest-commander';

import { parseIntegerOption } from '../options';

interface DoctorFlags {
  workspace?: string;
  host?: string;
  port?: number;
  json?: boolean;
}

@Command({
  description:
    'Check what a first run needs (Node, git, the agent CLIs and their logins, a GitHub token, isolation, the port, the data directory) and how to fix each miss',
  name: 'doctor',
})
export class DoctorCommand extends CommandRunner {
  async run(_params: string[], flags: DoctorFlags): Promise<void> {
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
