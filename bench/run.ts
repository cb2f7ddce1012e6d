import * as fs from 'node:fs';
import * as path from 'node:path';

import { ManagerProcess, ROOT, makeSandbox, startManager } from '../test/support/manager-process';
import { ScenarioResult, passes, progress, table, writeResults } from './harness';
import { concurrentRunsScenario } from './scenarios/concurrent-runs';
import { dashboardScenario } from './scenarios/dashboard';
import { githubBudgetScenario } from './scenarios/github-budget';
import { repliesScenario } from './scenarios/replies';
import { sseFanoutScenario } from './scenarios/sse-fanout';
import { traceFloodScenario } from './scenarios/trace-flood';

/** Scenarios on a default manager; the others start managers of their own (agent settings). */
const SCENARIOS: Record<string, (manager: ManagerProcess) => Promise<ScenarioResult>> = {
  replies: repliesScenario,
  'sse-fanout': sseFanoutScenario,
};
const SELF_CONTAINED: Record<string, () => Promise<ScenarioResult>> = {
  'concurrent-runs': concurrentRunsScenario,
  dashboard: dashboardScenario,
  'github-budget': githubBudgetScenario,
  'trace-flood': traceFloodScenario,
};

/** `npm run bench [-- scenario…]`: each scenario on a fresh manager and database. */
async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const names = wanted.length > 0 ? wanted : [...Object.keys(SCENARIOS), ...Object.keys(SELF_CONTAINED)];
  const results: ScenarioResult[] = [];
  for (const name of names) {
    const own = SELF_CONTAINED[name];
    if (own) {
      progress(`${name}: started`);
      results.push(await own());
      continue;
    }
    const scenario = SCENARIOS[name];
    if (!scenario) {
      throw new Error(`unknown scenario ${name}; known: ${[...Object.keys(SCENARIOS), ...Object.keys(SELF_CONTAINED)].join(', ')}`);
    }
    const sandbox = makeSandbox();
    const manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
    try {
      progress(`${name}: started`);
      results.push(await scenario(manager));
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  }
  const markdown = table(results);
  process.stdout.write(`${markdown}\n`);
  const file = writeResults(results);
  progress(`results written to ${path.relative(ROOT, file)}`);
  const failed = results.flatMap((r) => r.figures).filter((f) => passes(f) === false);
  if (failed.length > 0) {
    progress(`${failed.length} figure(s) missed their target`);
  }
  fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'latest.md'), `${markdown}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
