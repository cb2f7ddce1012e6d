#!/usr/bin/env node
// `npm run test:postgres`: the suites that prove PostgreSQL behaves as SQLite does where the store
// makes a difference, against TEST_DATABASE_URL, or against a throwaway cluster started here (and removed
// afterwards) when it is unset. Needs the built server (npm test or npm run build:server first).
// Its last line is "N passed, N failed"; with AM_TEST_SUMMARY naming the file `npm test` wrote its
// counts to, that line sums both runs (what .ci/run prints last).
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const cluster = require('./postgres-cluster');
const timings = require('./test-timings');

const root = path.resolve(__dirname, '..');
/**
 * The suites whose behaviour depends on the store (issue 50): the schema and migrations, the write
 * path's durability across kill -9, the event log's order and ids, attachments' bytes, what each
 * store refuses of a request's text (the fuzz: PostgreSQL refuses NUL in text, SQLite does not),
 * copying a workspace between stores, team mode (a board exists only on PostgreSQL), the
 * integration tier (each service's rules on the store directly), and one end-to-end smoke
 * (requirements over HTTP), and the import of an issue once (a unique index). Everything else runs the same repositories and SQL on both and is
 * proven on SQLite; docs/testing.md says which suite proves what.
 */
const SUITES = [
  'server/src/core/database/schema.postgres.spec.ts',
  'server/src/budgets/budget-trees-migration.spec.ts',
  'server/src/configuration/cut-channel-urls-migration.spec.ts',
  'test/postgres.e2e-spec.ts',
  'test/db-copy.e2e-spec.ts',
  'test/requirements.e2e-spec.ts',
  'test/issue-import.e2e-spec.ts',
  'test/issue-tracker.e2e-spec.ts',
  'test/events.e2e-spec.ts',
  'test/attachments.e2e-spec.ts',
  'test/fuzz.e2e-spec.ts',
  'test/team-board.e2e-spec.ts',
  'test/team-move.e2e-spec.ts',
  'test/team-jobs.e2e-spec.ts',
  'test/faults/crash-restart.fault-spec.ts',
  'test/integration/budgets.int-spec.ts',
  'test/integration/dependencies.int-spec.ts',
  'test/integration/messages.int-spec.ts',
  'test/integration/pull-requests.int-spec.ts',
  'test/integration/requirements.int-spec.ts',
  'test/integration/retention.int-spec.ts',
  'test/integration/timers.int-spec.ts',
];

function counts(report) {
  try {
    const r = JSON.parse(fs.readFileSync(report, 'utf8'));
    return {
      failed: r.numFailedTests + r.numRuntimeErrorTestSuites,
      passed: r.numPassedTests,
      skipped: r.numPendingTests + r.numTodoTests,
    };
  } catch {
    return { failed: 1, passed: 0, skipped: 0 }; // jest crashed before writing results
  }
}

function line({ passed, failed, skipped }) {
  return `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
}

// Suites named on the command line (paths from SUITES) run alone; other arguments go to jest.
const chosen = process.argv.slice(2).filter((arg) => SUITES.includes(arg));
const rest = process.argv.slice(2).filter((arg) => !SUITES.includes(arg));

async function main() {
  let url = process.env.TEST_DATABASE_URL;
  let own;
  if (!url) {
    own = await cluster.start();
    url = own.url;
  }
  process.stdout.write(`> PostgreSQL suites against ${url}\n`);
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'am-jest-pg-')), 'results.json');
  let jest;
  try {
    const args = [
      require.resolve('jest/bin/jest'),
      '--ci',
      '--maxWorkers=2',
      '--json',
      `--outputFile=${report}`,
      // unit too: the schema and migration specs in SUITES are unit specs that take the URL.
      '--selectProjects',
      'unit',
      'e2e',
      'faults',
      'integration',
      '--runTestsByPath',
      ...(chosen.length > 0 ? chosen : SUITES),
    ];
    const began = Date.now();
    jest = spawnSync(process.execPath, [...args, ...rest], {
      cwd: root,
      env: { ...process.env, TEST_DATABASE_URL: url, TZ: 'UTC' },
      stdio: 'inherit',
    });
    timings.step('jest (PostgreSQL)', Date.now() - began);
    timings.suites(report, 'postgres');
  } finally {
    if (own) {
      cluster.stop(own.dir);
    }
  }
  const here = counts(report);
  let total = here;
  if (process.env.AM_TEST_SUMMARY && fs.existsSync(process.env.AM_TEST_SUMMARY)) {
    const before = JSON.parse(fs.readFileSync(process.env.AM_TEST_SUMMARY, 'utf8'));
    total = {
      failed: before.failed + here.failed,
      passed: before.passed + here.passed,
      skipped: before.skipped + here.skipped,
    };
    process.stdout.write(`\nPostgreSQL: ${line(here)}\n`);
  }
  if (total.skipped > 0) {
    process.stdout.write(`\n${total.skipped} skipped (the suites of the other store)\n`);
  }
  // The last line is exactly "N passed, N failed" (what CI reads).
  process.stdout.write(`\n${total.passed} passed, ${total.failed} failed\n`);
  process.exit(jest.status === 0 && total.failed === 0 ? 0 : 1);
}

main().catch((err) => {
  process.stdout.write(`\n${err.message}\n0 passed, 1 failed\n`);
  process.exit(1);
});
