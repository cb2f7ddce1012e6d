import * as path from 'node:path';

import { send } from '../../test/support/http';
import {
  WORKTREE_AGENT,
  createRequirement,
  initRepository,
  wholeReport,
  settled,
  startRun,
} from '../../test/support/git-repo';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const ROUNDS = 6;
const CONCURRENT = 10;

/** A small repository: the sandbox's cost, not the checkout's, is what is measured. */
function repository(dir: string): void {
  const files: Record<string, string> = { 'README.md': '# sandbox bench\n' };
  for (let i = 0; i < 200; i++) {
    files[`src/d${i % 10}/f${i}.ts`] = `export const v${i} = ${i};\n`;
  }
  initRepository(dir, files);
}

interface Side {
  label: 'on' | 'off';
  /** Where its agents write their reports (each run has a /tmp of its own). */
  reports: string;
  manager: ManagerProcess;
  toAgent: number[];
  wall: number[];
  concurrentWall: number[];
}

/** POST /start of a new Requirement until its (synthetic) agent runs in its new worktree, and until the run succeeded. */
async function firstRun(side: Side, round: number): Promise<void> {
  const requirement = await createRequirement(side.manager, { title: `Sandbox ${side.label} ${round}` });
  const report = path.join(side.reports, `${side.label}-${round}.json`);
  const started = Date.now();
  await startRun(side.manager, requirement.id, `report:${report}`);
  // Whole, not only there: the agent may still be writing it.
  const place = await until('the agent to start', async () => wholeReport(report), 60_000, 5);
  side.toAgent.push(place.startedAt - started);
  const { run } = await settled(side.manager, requirement.id, 1);
  if (run.status !== 'succeeded') {
    throw new Error(`a run with the sandbox ${side.label} ended ${run.status}: ${run.error}`);
  }
  side.wall.push(Date.parse(run.finishedAt!) - started);
}

/** Ten Requirements started at once: each run's wall time (start request to finished). */
async function concurrent(side: Side, round: number): Promise<void> {
  const requirements = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, i) =>
      createRequirement(side.manager, { title: `Many ${side.label} ${round}.${i}` }),
    ),
  );
  const started = Date.now();
  await Promise.all(
    requirements.map((r) => send(side.manager.origin, 'POST', `/api/requirements/${r.id}/start`, { message: 'go' })),
  );
  for (const r of requirements) {
    const { run } = await settled(side.manager, r.id, 1);
    if (run.status !== 'succeeded') {
      throw new Error(`a concurrent run with the sandbox ${side.label} ended ${run.status}: ${run.error}`);
    }
    side.concurrentWall.push(Date.parse(run.finishedAt!) - started);
  }
}

/**
 * Issue 25: what the sandbox adds to a run. Two managers on two copies of one repository, the
 * sandbox on (`agentIsolation: auto`, bubblewrap) and off, measured alternately (which goes first
 * alternates by round): a first run's time from POST /start until its agent runs in its new
 * worktree, the run's wall time, and the wall time of each of ten runs started at once.
 */
export async function sandboxScenario(): Promise<ScenarioResult> {
  const boxes = [makeSandbox(), makeSandbox()];
  const sides: Side[] = [];
  try {
    for (const box of boxes) {
      repository(box.workspace);
    }
    const env = { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT };
    sides.push({
      concurrentWall: [],
      label: 'on',
      manager: await startManager({ args: ['--log-level', 'warn'], env, sandbox: boxes[0] }),
      reports: boxes[0].shared,
      toAgent: [],
      wall: [],
    });
    sides.push({
      concurrentWall: [],
      label: 'off',
      reports: boxes[1].shared,
      manager: await startManager({
        args: ['--log-level', 'warn'],
        // No sandbox, so no network of its own: open, or its runs would be refused (issue 45).
        env: { ...env, CODE_FACTORY_AGENT_ISOLATION: 'off', CODE_FACTORY_NETWORK_MODE: 'open' },
        sandbox: boxes[1],
      }),
      toAgent: [],
      wall: [],
    });
    const health = (await send(sides[0].manager.origin, 'GET', '/api/health')).json.agentIsolation as {
      enabled: boolean;
      reason: string | null;
    };
    if (!health.enabled) {
      throw new Error(`the sandbox is not available here: ${health.reason}`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      progress(`sandbox: round ${r + 1}/${ROUNDS}`);
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        await firstRun(side, r);
      }
    }
    for (let r = 0; r < 2; r++) {
      progress(`sandbox: ${CONCURRENT} at once, round ${r + 1}/2`);
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        await concurrent(side, r);
      }
    }
  } finally {
    await Promise.all(sides.map((side) => side.manager.stop()));
    boxes.forEach((box) => box.cleanup());
  }
  const p = (list: number[], at: number) =>
    percentile(
      [...list].sort((a, b) => a - b),
      at,
    );
  const [on, off] = sides;
  return {
    figures: [
      {
        name: `first run until its agent starts, sandbox on, p50 of ${ROUNDS}`,
        unit: 'ms',
        value: round(p(on.toAgent, 50), 0),
      },
      {
        name: `first run until its agent starts, sandbox off, p50 of ${ROUNDS}`,
        unit: 'ms',
        value: round(p(off.toAgent, 50), 0),
      },
      {
        name: 'time to agent start, sandbox on / off (p50)',
        unit: '',
        value: round(p(on.toAgent, 50) / p(off.toAgent, 50)),
      },
      { name: 'run wall time, sandbox on / off (p50)', unit: '', value: round(p(on.wall, 50) / p(off.wall, 50)) },
      {
        name: `${CONCURRENT} runs at once: wall time p50, sandbox on / off`,
        unit: '',
        value: round(p(on.concurrentWall, 50) / p(off.concurrentWall, 50)),
      },
      {
        name: `${CONCURRENT} runs at once: wall time p95, sandbox on / off`,
        unit: '',
        value: round(p(on.concurrentWall, 95) / p(off.concurrentWall, 95)),
      },
    ],
    notes: sides.map(
      (s) =>
        `sandbox ${s.label}: to agent ${s.toAgent.join(', ')} ms; wall ${s.wall.join(', ')} ms; ${CONCURRENT} at once p50/p95 ${p(s.concurrentWall, 50)}/${p(s.concurrentWall, 95)} ms`,
    ),
    scenario: 'sandbox',
  };
}
