import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

import { ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { ScenarioResult, percentile, progress, round } from '../harness';

const STARTS = 8;
const CLI_CALLS = 10;
const AGENT_MANAGER = path.join(ROOT, 'bin', 'agent-manager.js');
const CODE_FACTORY_CLI = path.join(ROOT, 'bin', 'code-factory-cli.js');

/** Milliseconds each run of `args` takes, sorted; the runs one after another, nothing else running. */
function timed(runs: number, args: string[], env: NodeJS.ProcessEnv = {}): number[] {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const began = process.hrtime.bigint();
    spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
    times.push(Number(process.hrtime.bigint() - began) / 1e6);
  }
  return times.sort((a, b) => a - b);
}

/**
 * What a person waits for before anything happens: a manager's start on a fresh workspace (the
 * process spawned → `/api/health` answers), and the commands a person or an agent types most
 * (`agent-manager status`, `code-factory-cli --help`). The floor is this machine's own: an empty
 * Node.js process, started the same way in the same run.
 */
export async function startUpScenario(): Promise<ScenarioResult> {
  const floor = timed(CLI_CALLS, ['-e', '']);
  const starts: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const sandbox = makeSandbox();
    try {
      const began = process.hrtime.bigint();
      const manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
      starts.push(Number(process.hrtime.bigint() - began) / 1e6);
      await manager.stop();
    } finally {
      sandbox.cleanup();
    }
  }
  starts.sort((a, b) => a - b);
  // `status` of a running manager asks it for its figures: the whole command a person runs.
  const sandbox = makeSandbox();
  let status: number[];
  try {
    const manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
    try {
      status = timed(CLI_CALLS, [AGENT_MANAGER, 'status', '--workspace', sandbox.workspace], {
        CODE_FACTORY_HOME: sandbox.home,
      });
    } finally {
      await manager.stop();
    }
  } finally {
    sandbox.cleanup();
  }
  const help = timed(CLI_CALLS, [CODE_FACTORY_CLI, '--help']);
  const floorP50 = percentile(floor, 50);
  progress(`start-up: node -e '' ${round(floorP50, 0)} ms, manager start p50 ${round(percentile(starts, 50), 0)} ms`);
  return {
    figures: [
      { name: `an empty Node.js process (the floor, p50 of ${CLI_CALLS})`, unit: 'ms', value: round(floorP50, 0) },
      {
        name: `manager start to healthy on a fresh workspace (p50 of ${STARTS})`,
        unit: 'ms',
        value: round(percentile(starts, 50), 0),
      },
      { name: `manager start to healthy (p95 of ${STARTS})`, unit: 'ms', value: round(percentile(starts, 95), 0) },
      {
        name: `\`agent-manager status\` of a running manager (p50 of ${CLI_CALLS})`,
        unit: 'ms',
        value: round(percentile(status, 50), 0),
      },
      {
        name: '`agent-manager status` / the floor (p50)',
        // Was 17.6× when every command loaded the server (issue 50); 10× leaves a loaded machine room.
        target: { op: '<=', value: 10 },
        unit: '×',
        value: round(percentile(status, 50) / floorP50, 1),
      },
      { name: `\`code-factory-cli --help\` (p50 of ${CLI_CALLS})`, unit: 'ms', value: round(percentile(help, 50), 0) },
    ],
    scenario: 'start-up',
  };
}
