#!/usr/bin/env node
// `npm test`: typecheck, lint, check formatting, build what the end-to-end tests run (server, CLI, dashboard), then run
// every jest suite, then (when PostgreSQL is installed) the PostgreSQL suites (scripts/test-postgres.js).
// The last line is always "N passed, N failed", summing both.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const fs = require('node:fs');
// Test-only packages with their own lock files, each installed once and again whenever its lock
// file changes: the real Codex and Claude Code CLIs the adapter tests drive, and the Node.js builds
// the supported-versions suite starts the manager with (pinned; never runtime dependencies).
const testPackages = ['agent-clis', 'node-runtimes'].map((name) => path.join(root, 'test', name));
const current = (dir) => {
  const installed = path.join(dir, 'node_modules', '.package-lock.json');
  return (
    fs.existsSync(installed) &&
    fs.statSync(installed).mtimeMs >= fs.statSync(path.join(dir, 'package-lock.json')).mtimeMs
  );
};
// A fresh clone: install the locked dependencies first.
require('./ensure-dependencies')();
const timings = require('./test-timings');
const wholeRunAsked = process.argv.length <= 2;
if (wholeRunAsked) {
  timings.reset();
}
// Installs first, one at a time; then the checks side by side (typecheck, lint, format and the
// architecture report read the same files and write nothing), then both builds side by side. A
// step's output is printed whole when it ends, so concurrent steps do not interleave their lines.
const installs = testPackages
  .filter((dir) => !current(dir))
  .map((dir) => [`install ${path.basename(dir)}`, ['npm', 'ci', '--prefix', dir, '--no-audit', '--no-fund']]);
const groups = [
  ...installs.map((step) => [step]),
  [
    ['typecheck', ['npm', 'run', '--silent', 'typecheck']],
    ['lint', ['npm', 'run', '--silent', 'lint']],
    ['format', ['npm', 'run', '--silent', 'format:check']],
    ['architecture', ['npm', 'run', '--silent', 'architecture', '--', '--check']],
  ],
  [
    ['build:server', ['npm', 'run', '--silent', 'build:server']],
    ['build:dashboard', ['npm', 'run', '--silent', 'build:dashboard']],
  ],
];
const { spawn } = require('node:child_process');
/** Runs one step with its output collected; resolves with its exit status and that output. */
const runStep = ([name, [cmd, ...args]]) =>
  new Promise((resolve) => {
    const began = Date.now();
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, NG_CLI_ANALYTICS: 'false' } });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => output.push(Buffer.from(`${err.message}\n`)));
    child.on('close', (code) => {
      timings.step(name, Date.now() - began);
      resolve({ name, output: Buffer.concat(output), status: code });
    });
  });
const failed = (name) => {
  if (process.env.AM_TEST_SUMMARY) {
    fs.writeFileSync(process.env.AM_TEST_SUMMARY, JSON.stringify({ failed: 1, passed: 0, skipped: 0 }));
  }
  // Exits once the output is written: a pipe may take it after the write returns.
  process.stdout.write(`\n${name} failed\n0 passed, 1 failed\n`, () => process.exit(1));
};
const checks = (async () => {
  for (const group of groups) {
    process.stdout.write(`> ${group.map(([name]) => name).join(', ')}\n`);
    const results = await Promise.all(group.map(runStep));
    for (const result of results) {
      if (result.output.length > 0) {
        process.stdout.write(`--- ${result.name}\n`);
        process.stdout.write(result.output);
      }
    }
    const failure = results.find((result) => result.status !== 0);
    if (failure) {
      failed(failure.name);
      await new Promise(() => undefined); // nothing after a failed step: the process exits once the line is out
    }
  }
})();
checks
  .then(() => {
    const os = require('node:os');
    const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'am-jest-')), 'results.json');
    const jestBegan = Date.now();
    const jest = spawnSync(
      process.execPath,
      [
        require.resolve('jest/bin/jest'),
        '--ci',
        '--maxWorkers=2',
        '--json',
        `--outputFile=${report}`,
        ...process.argv.slice(2),
      ],
      {
        cwd: root,
        env: { ...process.env, TZ: 'UTC' },
        stdio: 'inherit',
      },
    );
    timings.step('jest (SQLite and the rest)', Date.now() - jestBegan);
    timings.suites(report, 'sqlite');
    let line = '0 passed, 1 failed';
    let summary = { failed: 1, passed: 0, skipped: 0 };
    try {
      const results = JSON.parse(fs.readFileSync(report, 'utf8'));
      const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
      const skipped = results.numPendingTests + results.numTodoTests;
      summary = { failed, passed: results.numPassedTests, skipped };
      line = `${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
    } catch {
      // jest crashed before writing results: counted as one failure
    }
    // A whole run (no jest arguments) goes on with the suites that prove PostgreSQL behaves as SQLite
    // does, when PostgreSQL is installed (.ci/run installs it); its last line sums both runs.
    const cluster = require('./postgres-cluster');
    const wholeRun = process.argv.length <= 2 && process.env.AM_SKIP_POSTGRES !== '1';
    if (wholeRun && !cluster.available()) {
      process.stdout.write(
        '\n> PostgreSQL is not installed: its suites are skipped (apt-get install postgresql, or AM_SKIP_POSTGRES=1 to skip on purpose)\n',
      );
    }
    const summaryFile = process.env.AM_TEST_SUMMARY ?? path.join(path.dirname(report), 'summary.json');
    fs.writeFileSync(summaryFile, JSON.stringify(summary));
    if (wholeRun && cluster.available()) {
      process.stdout.write(`\nSQLite and the rest: ${line}\n`);
      const pg = spawnSync(process.execPath, [path.join(__dirname, 'test-postgres.js')], {
        cwd: root,
        env: { ...process.env, AM_TEST_SUMMARY: summaryFile },
        stdio: 'inherit',
      });
      process.exit(jest.status === 0 && pg.status === 0 ? 0 : 1);
    }
    if (summary.skipped > 0) {
      process.stdout.write(`\n${summary.skipped} skipped\n`);
    }
    // The last line is exactly "N passed, N failed" (what CI reads).
    process.stdout.write(`\n${summary.passed} passed, ${summary.failed} failed\n`);
    process.exit(jest.status ?? 1);
  })
  .catch((err) => {
    // Whatever went wrong here still ends with the line CI reads.
    process.stdout.write(`${err && err.stack ? err.stack : err}\n`);
    failed('npm test');
  });
