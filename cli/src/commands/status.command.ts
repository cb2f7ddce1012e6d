import { Command, CommandRunner, Option } from 'nest-commander';

import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { describeStatus, inspectDaemon } from '../daemon/daemon-control';
import { formatUptime, rows } from '../daemon/daemon-format';
import { UsageError } from '../options';
import { OwnerApi } from '../owner/owner-api';

/** `status` exit codes, as init scripts have them: 0 a manager answers, 3 none runs. */
const EXIT_NOT_RUNNING = 3;

interface StatusFlags {
  workspace?: string;
  json?: boolean;
}

interface ManagerFigures {
  version: string;
  uptimeSeconds: number;
  activeRuns: number;
}

@Command({
  description:
    'Say whether Agent Manager runs for a workspace: pid, URL, uptime, active runs (exit 3 when it does not)',
  name: 'status',
})
export class StatusCommand extends CommandRunner {
  async run(_params: string[], flags: StatusFlags): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const view = inspectDaemon(paths);
    const { reason, status, supervised } = describeStatus(view);
    const state = view.state;
    const crashes = state?.crashes ?? [];
    let figures: ManagerFigures | null = null;
    let unreachable: string | null = null;
    if (view.manager?.url) {
      try {
        // The owner's token from the data directory: metrics (active runs) need it.
        const api = new OwnerApi(paths);
        const health = await api.call('health', (client, signal) => client.GET('/api/health', { signal }));
        const metrics = await api.call('metrics', (client, signal) => client.GET('/api/metrics', { signal }));
        figures = { activeRuns: metrics.activeRuns, uptimeSeconds: metrics.uptimeSeconds, version: health.version };
      } catch (err) {
        unreachable = (err as Error).message;
      }
    }
    const running = figures !== null;
    const report = {
      activeRuns: figures?.activeRuns ?? null,
      crashes,
      logPath: state?.logPath ?? null,
      pid: view.manager?.pid ?? null,
      reason: unreachable ?? reason,
      restarts: state?.restarts ?? 0,
      running,
      status,
      supervised,
      supervisorPid: view.supervisorPid,
      uptimeSeconds: figures?.uptimeSeconds ?? null,
      url: view.manager?.url ?? null,
      version: figures?.version ?? null,
      workspace: paths.root,
    };
    process.exitCode = running ? 0 : unreachable !== null ? 1 : EXIT_NOT_RUNNING;
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    if (!view.manager?.url) {
      const headline: Record<string, string> = {
        failed: 'is not running',
        'not-running': 'is not running',
        restarting: `is restarting after a crash${state?.nextStartAt ? ` (next start at ${state.nextStartAt})` : ''}`,
        running: 'is not running',
        starting: view.manager ? `is starting (pid ${view.manager.pid})` : 'is starting',
        stopped: 'is not running',
        stopping: 'is stopping',
      };
      process.stdout.write(
        `Agent Manager ${headline[status] ?? 'is not running'} for ${paths.root}${report.reason ? `: ${report.reason}` : ''}\n`,
      );
      return;
    }
    const lastCrash = crashes[crashes.length - 1];
    process.stdout.write(
      [
        unreachable !== null
          ? `Agent Manager is running for ${paths.root} but does not answer: ${unreachable}`
          : `Agent Manager ${figures?.version} is running for ${paths.root}`,
        rows([
          ['URL', view.manager.url],
          [
            'PID',
            `${view.manager.pid}${view.supervisorPid !== null ? ` (supervisor ${view.supervisorPid})` : ` (${reason})`}`,
          ],
          ['Uptime', figures ? formatUptime(figures.uptimeSeconds) : '?'],
          ['Active runs', figures ? String(figures.activeRuns) : '?'],
          ...(supervised
            ? ([
                [
                  'Restarts',
                  `${report.restarts}${lastCrash ? ` (last crash ${lastCrash.at}: ${lastCrash.signal ?? `exit code ${lastCrash.exitCode}`})` : ''}`,
                ],
                ['Log', state?.logPath ?? ''],
              ] as Array<[string, string]>)
            : []),
        ]),
        '',
      ].join('\n'),
    );
  }

  @Option({
    description: 'Repository whose Agent Manager to look for (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({ description: 'Print the status as JSON', flags: '--json' })
  parseJson(): boolean {
    return true;
  }
}
