#!/usr/bin/env node
// `npm start [-- options]`: installs the dependencies when missing, builds whatever is missing or older than its sources, then runs
// `agent-manager start` in this process. npm runs scripts in the package folder, so the directory the user was
// in (INIT_CWD) is the default workspace.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      newest = Math.max(newest, newestMtime(full));
    } else if (!entry.name.endsWith('.spec.ts')) {
      newest = Math.max(newest, fs.statSync(full).mtimeMs);
    }
  }
  return newest;
}

function outdated(output, sources) {
  if (!fs.existsSync(output)) {
    return true;
  }
  const built = fs.statSync(output).mtimeMs;
  return sources.some((dir) => newestMtime(path.join(root, dir)) > built);
}

function run(script) {
  process.stderr.write(`Building (${script})…\n`);
  // The build's own output (progress, warnings such as a bundler's notes) stays off the console
  // unless it fails: `npm start` promises one banner. Kept in memory, it is shown whole on failure.
  const result = spawnSync('npm', ['run', '--silent', script], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NG_CLI_ANALYTICS: 'false' },
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    process.stderr.write(`agent-manager: npm run ${script} failed${result.error ? `: ${result.error.message}` : ''}\n`);
    process.exit(result.status ?? 1);
  }
}

// A fresh clone: install the locked dependencies first.
require('./ensure-dependencies')();
if (outdated(path.join(root, 'dist/cli/src/agent-manager.js'), ['server/src', 'cli/src', 'libs/contracts/src'])) {
  run('build:server');
}
if (outdated(path.join(root, 'dist/dashboard/browser/index.html'), ['dashboard/src', 'libs/contracts/src'])) {
  run('build:dashboard');
}

const args = process.argv.slice(2);
if (!args.includes('--workspace') && !args.includes('-w') && !args.some((a) => a.startsWith('--workspace='))) {
  args.push('--workspace', process.env.INIT_CWD || process.cwd());
}
// The manager runs in this very process rather than in a child: there is no signal to forward
// (a forwarded TERM used to arrive twice with a process group's own), and --stop-with-parent
// ends it gracefully when npm or its sh die on a supervisor's SIGTERM without passing it on.
process.argv = [process.execPath, path.join(root, 'bin/agent-manager.js'), 'start', ...args, '--stop-with-parent'];
require(path.join(root, 'bin/agent-manager.js'));
