'use strict';
// Where a test run's time went (issue 50): each step's seconds (typecheck, lint, builds) and each
// suite's, from jest's JSON results. `npm test` prints the 15 slowest suites and keeps the whole
// list in test-artifacts/timings.json (beside the other artifacts), merged across the SQLite and
// PostgreSQL runs, so that a slow or growing suite can be named from any CI log.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const file = path.join(root, 'test-artifacts', 'timings.json');
const SHOWN = 15;

function load() {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return { steps: [], suites: [] };
  }
}

function save(timings) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(timings, null, 2)}\n`);
}

/** Starts a fresh record (a whole `npm test`). */
function reset() {
  save({ startedAt: new Date().toISOString(), steps: [], suites: [] });
}

function step(name, ms) {
  const timings = load();
  timings.steps.push({ name, seconds: Math.round(ms / 100) / 10 });
  save(timings);
}

/** Adds the suites of one jest run (`run`: sqlite, postgres) and prints its slowest. */
function suites(resultsFile, run) {
  let results;
  try {
    results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  } catch {
    return;
  }
  const rows = results.testResults
    // jest's --json form of a suite: startTime/endTime in ms and one assertionResult per test.
    .map((r) => {
      const tests = r.assertionResults ?? [];
      const failed = tests.filter((t) => t.status === 'failed').length;
      return {
        failed,
        run,
        seconds: Math.round(((r.endTime ?? 0) - (r.startTime ?? 0)) / 100) / 10,
        suite: path.relative(root, r.name),
        tests: tests.filter((t) => t.status === 'passed').length + failed,
      };
    })
    .sort((a, b) => b.seconds - a.seconds);
  const timings = load();
  timings.suites.push(...rows);
  save(timings);
  const total = rows.reduce((sum, r) => sum + r.seconds, 0);
  process.stdout.write(
    `\nThe ${Math.min(SHOWN, rows.length)} slowest of ${rows.length} suites (${run}; ${Math.round(total)} s of suite time in all; test-artifacts/timings.json has them all):\n`,
  );
  for (const row of rows.slice(0, SHOWN)) {
    process.stdout.write(
      `  ${String(row.seconds).padStart(6)} s  ${row.suite} (${row.tests} tests${row.failed ? `, ${row.failed} failed` : ''})\n`,
    );
  }
}

module.exports = { reset, step, suites };
