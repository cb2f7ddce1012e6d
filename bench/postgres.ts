import * as path from 'node:path';

import { ROOT } from '../test/support/manager-process';
import { Figure, ScenarioResult, progress, round } from './harness';

// The PostgreSQL variants of the scenarios (issue 19): the same scenario, its managers on a
// PostgreSQL server (each workspace in its schema `am_<key>`, as CODE_FACTORY_DATABASE_URL puts
// it), run after its SQLite run in the same bench run, with PostgreSQL/SQLite ratios of the
// headline figures. The server is BENCH_DATABASE_URL when set, else a throwaway cluster
// (scripts/postgres-cluster.js) started once for the run and stopped at its end.

/** `replies@postgres` selects the PostgreSQL variant of `replies`. */
export const POSTGRES_SUFFIX = '@postgres';
/** The scenarios that have a PostgreSQL variant. */
export const POSTGRES_VARIANTS = ['replies', 'sse-fanout', 'trace-flood', 'scale'];
/**
 * The scenarios that exist on PostgreSQL only (team mode's board needs it): run on the same
 * server as the variants, under their own name, with no SQLite run and no ratios.
 */
export const POSTGRES_ONLY = ['team'];

/** The result name of a variant, shown beside the SQLite one in the table. */
export function postgresScenarioName(scenario: string): string {
  return `${scenario} (PostgreSQL)`;
}

interface Cluster {
  url: string;
  /** The throwaway cluster's directory (absent for BENCH_DATABASE_URL). */
  dir?: string;
}

interface ClusterScript {
  available(): boolean;
  start(): Promise<{ dir: string; url: string }>;
  stop(dir: string): void;
}

let cluster: Cluster | null | undefined;

/** The server for the variants, started on first use; null (with a progress line) when there is none. */
export async function postgresServer(): Promise<Cluster | null> {
  if (cluster !== undefined) {
    return cluster;
  }
  if (process.env.BENCH_DATABASE_URL) {
    cluster = { url: process.env.BENCH_DATABASE_URL };
    progress(`PostgreSQL: BENCH_DATABASE_URL (${cluster.url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')})`);
    return cluster;
  }
  const script = require(path.join(ROOT, 'scripts', 'postgres-cluster.js')) as ClusterScript;
  if (!script.available()) {
    progress(
      'PostgreSQL: not installed here (no initdb/pg_ctl) and no BENCH_DATABASE_URL: the PostgreSQL variants are skipped',
    );
    cluster = null;
    return cluster;
  }
  const started = await script.start();
  cluster = started;
  progress(`PostgreSQL: throwaway cluster at ${started.url} in ${started.dir}`);
  // Stopped however the run ends (spawnSync inside: safe in an exit handler).
  process.once('exit', stopPostgresServer);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => process.exit(130));
  }
  return cluster;
}

/** Stops the throwaway cluster, if one was started (idempotent). */
export function stopPostgresServer(): void {
  if (cluster?.dir) {
    const { dir } = cluster;
    cluster = null;
    (require(path.join(ROOT, 'scripts', 'postgres-cluster.js')) as ClusterScript).stop(dir);
    progress(`PostgreSQL: cluster stopped, ${dir} removed`);
  }
}

/**
 * Runs `fn` with TEST_DATABASE_URL set (sandbox.cleanup() drops the schemas of its workspaces,
 * test/support/postgres.ts queries them) and, unless `storeEnv` is false, CODE_FACTORY_DATABASE_URL
 * (every manager spawned meanwhile keeps its store there); both restored afterwards.
 */
export async function withPostgres<T>(url: string, fn: () => Promise<T>, storeEnv = true): Promise<T> {
  const saved = { store: process.env.CODE_FACTORY_DATABASE_URL, test: process.env.TEST_DATABASE_URL };
  process.env.TEST_DATABASE_URL = url;
  if (storeEnv) {
    process.env.CODE_FACTORY_DATABASE_URL = url;
  } else {
    delete process.env.CODE_FACTORY_DATABASE_URL;
  }
  try {
    return await fn();
  } finally {
    restore('CODE_FACTORY_DATABASE_URL', saved.store);
    restore('TEST_DATABASE_URL', saved.test);
  }
}

/** Runs `fn` with neither variable set: the SQLite runs stay on SQLite whatever the shell exports. */
export async function withoutPostgres<T>(fn: () => Promise<T>): Promise<T> {
  const saved = { store: process.env.CODE_FACTORY_DATABASE_URL, test: process.env.TEST_DATABASE_URL };
  delete process.env.CODE_FACTORY_DATABASE_URL;
  delete process.env.TEST_DATABASE_URL;
  try {
    return await fn();
  } finally {
    restore('CODE_FACTORY_DATABASE_URL', saved.store);
    restore('TEST_DATABASE_URL', saved.test);
  }
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) {
    delete process.env[name];
  } else {
    process.env[name] = value;
  }
}

/** The headline figures compared, per scenario: the figure's name in both results. */
const HEADLINES: Record<string, string[]> = {
  replies: ['reply throughput', 'reply latency p99'],
  scale: [
    'requirements first page p99 large/small',
    'requirements deep page p99 large/small',
    'conversation late page p99 large/small',
    'search common word p99 large/small',
    'replay 200 events p99 large/small',
    // The small workspace has the same shape on both stores: its absolute figures compare directly.
    'requirements first page p99 small',
    'conversation late page p99 small',
    'search common word p99 small',
    'replay 200 events p99 small',
  ],
  'sse-fanout': ['mutation rate achieved', 'commit→client p99'],
  'trace-flood': [
    'reasoning events persisted / printed',
    'reasoning events persisted per second of run',
    'run wall time',
    'health p99 during flood',
  ],
};

/**
 * PostgreSQL/SQLite ratios of the headline figures (informational: no target), appended to the
 * variant's result, from the SQLite result of the same run; a note says when there is none.
 */
export function withRatios(
  scenario: string,
  postgres: ScenarioResult,
  sqlite: ScenarioResult | undefined,
): ScenarioResult {
  if (!sqlite || sqlite.figures.some((f) => f.name === 'scenario completed')) {
    return {
      ...postgres,
      notes: [...(postgres.notes ?? []), `no PostgreSQL/SQLite ratios: ${scenario} did not run on SQLite in this run`],
    };
  }
  const ratios: Figure[] = [];
  for (const name of HEADLINES[scenario] ?? []) {
    const pg = postgres.figures.find((f) => f.name === name);
    const lite = sqlite.figures.find((f) => f.name === name);
    if (pg && lite && lite.value !== 0 && Number.isFinite(pg.value / lite.value)) {
      ratios.push({ name: `${name}: PostgreSQL/SQLite`, unit: '×', value: round(pg.value / lite.value) });
    }
  }
  return { ...postgres, figures: [...postgres.figures, ...ratios] };
}
