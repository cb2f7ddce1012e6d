// Shared by `npm start` and `npm test`: a fresh clone has no node_modules, so the first run installs
// the locked dependencies (`npm ci`). An existing install is left alone (after a pull that changes
// package-lock.json, run `npm ci` yourself).
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

module.exports = function ensureDependencies() {
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  if (fs.existsSync(installed)) {
    return;
  }
  process.stderr.write('Installing dependencies (npm ci)…\n');
  // npm's notes (deprecations, funding) stay off the console unless the install fails.
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    process.stderr.write('agent-manager: npm ci failed\n');
    process.exit(result.status ?? 1);
  }
};
