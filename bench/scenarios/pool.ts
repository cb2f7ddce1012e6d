import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from '../../test/support/api';
import { WORKTREE_AGENT, createRequirement, initRepository, startRun, wholeReport } from '../../test/support/git-repo';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

/** What the issue names: a setup that takes 30 seconds (an install, a build). */
const SETUP = '#!/bin/sh\nsleep 30\necho installed > .installed\n';
const POOLED = 4;
const UNPOOLED = 2;

/** Start → the agent's process running in its working copy (its report's write), per Requirement. */
async function startToAgent(manager: ManagerProcess, shared: string, name: string): Promise<number> {
  const report = path.join(shared, `${name}.json`);
  const requirement = await createRequirement(manager, { title: name });
  const started = Date.now();
  await startRun(manager, requirement.id, `report:${report}`);
  await until('the agent to run', async () => wholeReport(report), 120_000, 5);
  return fs.statSync(report).mtimeMs - started;
}

/**
 * Issue 48 §6: a start (POST) → the agent running, with a 30-second setup script, when the pool
 * has a prepared copy ready, against the same start without the pool (the setup in the way).
 */
export async function poolScenario(): Promise<ScenarioResult> {
  const box = makeSandbox();
  const pooled: number[] = [];
  const unpooled: number[] = [];
  initRepository(box.workspace, {
    '.agent-manager/setup': SETUP,
    '.gitignore': '.installed\n',
    'README.md': '# pool bench\n',
  });
  const start = (pool: number) =>
    startManager({
      args: ['--log-level', 'warn'],
      env: {
        CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
        CODE_FACTORY_WORKTREE_POOL: String(pool),
      },
      sandbox: box,
    });
  let manager: ManagerProcess | null = null;
  try {
    manager = await start(0);
    for (let r = 0; r < UNPOOLED; r++) {
      progress(`pool: without a prepared copy ${r + 1}/${UNPOOLED}`);
      unpooled.push(await startToAgent(manager, box.shared, `unpooled-${r}`));
    }
    await manager.stop();
    manager = await start(POOLED);
    const api = manager.api;
    progress(`pool: preparing ${POOLED} copies (30 s setup each)`);
    await until(
      'the pool to be ready',
      async () => {
        const now = await ok(api.GET('/api/workspace/worktree-pool'));
        if (now.lastFailure !== null) {
          throw new Error(`the pool could not be filled: ${now.lastFailure.message}`);
        }
        return now.copies.filter((copy) => copy.state === 'ready').length === POOLED || undefined;
      },
      (POOLED + 1) * 60_000,
      500,
    );
    for (let r = 0; r < POOLED; r++) {
      progress(`pool: with a prepared copy ${r + 1}/${POOLED}`);
      pooled.push(await startToAgent(manager, box.shared, `pooled-${r}`));
    }
  } finally {
    await manager?.stop();
    box.cleanup();
  }
  const p = (list: number[], at: number) =>
    percentile(
      [...list].sort((a, b) => a - b),
      at,
    );
  return {
    figures: [
      {
        name: `start → agent running with a prepared copy (30 s setup), p50 of ${POOLED}`,
        target: { op: '<=', value: 500 },
        unit: 'ms',
        value: round(p(pooled, 50), 0),
      },
      { name: `the same with a prepared copy, max of ${POOLED}`, unit: 'ms', value: round(p(pooled, 100), 0) },
      {
        name: `start → agent running without the pool (the setup runs first), p50 of ${UNPOOLED}`,
        unit: 'ms',
        value: round(p(unpooled, 50), 0),
      },
    ],
    notes: [
      `with a prepared copy ${pooled.map((v) => Math.round(v)).join(', ')} ms; without ${unpooled.map((v) => Math.round(v)).join(', ')} ms`,
    ],
    scenario: 'pool',
  };
}
