import { ManagerProcess, makeSandbox, startManager } from '../test/support/manager-process';
import { ScenarioResult, passes, progress, publishResults, table } from './harness';
import {
  POSTGRES_ONLY,
  POSTGRES_SUFFIX,
  POSTGRES_VARIANTS,
  postgresScenarioName,
  postgresServer,
  stopPostgresServer,
  withPostgres,
  withRatios,
  withoutPostgres,
} from './postgres';
import { attentionScenario } from './scenarios/attention';
import { changesScenario } from './scenarios/changes';
import { concurrentRunsScenario } from './scenarios/concurrent-runs';
import { dashboardScenario } from './scenarios/dashboard';
import { fleetScenario } from './scenarios/fleet';
import { githubBudgetScenario } from './scenarios/github-budget';
import { landingScenario } from './scenarios/landing';
import { mcpScenario } from './scenarios/mcp';
import { networkScenario } from './scenarios/network';
import { poolScenario } from './scenarios/pool';
import { previewScenario } from './scenarios/preview';
import { repliesScenario } from './scenarios/replies';
import { reviewScenario } from './scenarios/review';
import { sandboxScenario } from './scenarios/sandbox';
import { scaleScenario } from './scenarios/scale';
import { sseFanoutScenario } from './scenarios/sse-fanout';
import { startUpScenario } from './scenarios/start-up';
import { teamScenario } from './scenarios/team';
import { traceFloodScenario } from './scenarios/trace-flood';
import { worktreeScenario } from './scenarios/worktree';

// No prepared worktrees (issue 48 §6) beside what a scenario measures, as before the pool existed:
// the pool scenario turns it on for its own manager.
process.env.CODE_FACTORY_WORKTREE_POOL ??= '0';

/** Scenarios on a default manager; the others start managers of their own (agent settings). */
const SCENARIOS: Record<string, (manager: ManagerProcess) => Promise<ScenarioResult>> = {
  replies: repliesScenario,
  'sse-fanout': sseFanoutScenario,
};
const SELF_CONTAINED: Record<string, (postgresUrl?: string) => Promise<ScenarioResult>> = {
  'concurrent-runs': concurrentRunsScenario,
  dashboard: dashboardScenario,
  'github-budget': githubBudgetScenario,
  mcp: mcpScenario,
  network: networkScenario,
  pool: poolScenario,
  preview: previewScenario,
  scale: (postgresUrl) => scaleScenario({ postgresUrl }),
  'trace-flood': (postgresUrl) => traceFloodScenario({ postgresUrl }),
  worktree: worktreeScenario,
  changes: changesScenario,
  sandbox: sandboxScenario,
  landing: landingScenario,
  review: reviewScenario,
  attention: attentionScenario,
  fleet: fleetScenario,
  'start-up': startUpScenario,
  team: (postgresUrl) => teamScenario(postgresUrl),
};

async function runScenario(name: string, postgresUrl?: string): Promise<ScenarioResult> {
  const own = SELF_CONTAINED[name];
  if (own) {
    return own(postgresUrl);
  }
  const sandbox = makeSandbox();
  const manager = await startManager({ args: ['--log-level', 'warn'], sandbox });
  try {
    return await SCENARIOS[name](manager);
  } finally {
    await manager.stop();
    sandbox.cleanup();
  }
}

/**
 * A scenario's run on its store: `replies` on SQLite; `replies@postgres` on PostgreSQL, its result
 * named `replies (PostgreSQL)` and carrying PostgreSQL/SQLite ratios from this run's `replies`.
 * Scale seeds and copies its SQLite stores itself (db copy), so it is given the URL rather than
 * the store variable; the other managers take CODE_FACTORY_DATABASE_URL from the environment.
 * A PostgreSQL-only scenario (`team`) runs on that server under its own name, or is skipped.
 */
async function runOnStore(name: string, done: Map<string, ScenarioResult>): Promise<ScenarioResult | null> {
  if (POSTGRES_ONLY.includes(name)) {
    const server = await postgresServer();
    return server ? withPostgres(server.url, () => runScenario(name, server.url)) : null;
  }
  if (!name.endsWith(POSTGRES_SUFFIX)) {
    return withoutPostgres(() => runScenario(name));
  }
  const base = name.slice(0, -POSTGRES_SUFFIX.length);
  const server = await postgresServer();
  if (!server) {
    return null;
  }
  const result = await withPostgres(server.url, () => runScenario(base, server.url), base !== 'scale');
  return withRatios(base, { ...result, scenario: postgresScenarioName(base) }, done.get(base));
}

/** Each scenario should finish within this (issue 8); a slower one is flagged. */
const SCENARIO_BUDGET_MS = 2 * 60_000;

/**
 * `npm run bench [-- scenario…]`: each scenario on a fresh manager and database, with progress.
 * Results merge into bench/results/latest.json and the table in docs/performance.md.
 */
async function main(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) {
    // The test support sends every manager there (STORE_ENV, read at import): SQLite runs included.
    throw new Error(
      'TEST_DATABASE_URL is set: unset it (the PostgreSQL variants use BENCH_DATABASE_URL, or a throwaway cluster)',
    );
  }
  // Each PostgreSQL variant right after its SQLite run.
  const order = [...Object.keys(SCENARIOS), ...Object.keys(SELF_CONTAINED)].flatMap((name) =>
    POSTGRES_VARIANTS.includes(name) ? [name, `${name}${POSTGRES_SUFFIX}`] : [name],
  );
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const names = wanted.length > 0 ? wanted : order;
  const unknown = names.filter((name) => !order.includes(name));
  if (unknown.length > 0) {
    throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${order.join(', ')}`);
  }
  const resultName = (name: string) =>
    name.endsWith(POSTGRES_SUFFIX) ? postgresScenarioName(name.slice(0, -POSTGRES_SUFFIX.length)) : name;
  const results: ScenarioResult[] = [];
  const done = new Map<string, ScenarioResult>();
  for (const [index, name] of names.entries()) {
    progress(`(${index + 1}/${names.length}) ${name}: started`);
    const started = Date.now();
    try {
      const result = await runOnStore(name, done);
      if (result) {
        results.push(result);
        done.set(name, result);
      } else {
        progress(`(${index + 1}/${names.length}) ${name}: skipped (no PostgreSQL server)`);
      }
    } catch (err) {
      // One broken scenario must not cost the others their figures: it is recorded as failed.
      progress(`(${index + 1}/${names.length}) ${name}: FAILED: ${(err as Error).message}`);
      results.push({
        figures: [{ name: 'scenario completed', target: { op: '>=', value: 1 }, unit: '', value: 0 }],
        notes: [(err as Error).message],
        scenario: resultName(name),
      });
    }
    const seconds = Math.round((Date.now() - started) / 1000);
    progress(
      `(${index + 1}/${names.length}) ${name}: done in ${seconds} s${seconds * 1000 > SCENARIO_BUDGET_MS ? ' (over its 2-minute budget)' : ''}`,
    );
  }
  stopPostgresServer();
  process.stdout.write(`${table(results)}\n`);
  publishResults(results, order.map(resultName));
  progress('results merged into bench/results/latest.json and docs/performance.md');
  const failed = results.flatMap((r) => r.figures).filter((f) => passes(f) === false);
  if (failed.length > 0) {
    progress(`${failed.length} figure(s) missed their target: ${failed.map((f) => f.name).join('; ')}`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
