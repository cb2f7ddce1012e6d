'use strict';
// The one walk of a source tree the repository's scripts share (the architecture report, the
// document references, the file cycles, the function sizes).
const fs = require('node:fs');
const path = require('node:path');

/** Folders never read: installs, builds, the pinned test packages, recorded fixtures, bench results. */
const SKIPPED = new Set(['node_modules', 'dist', '.angular', 'agent-clis', 'node-runtimes', 'fixtures', 'results']);

/** Every file below `dir` (absolute paths) that `keep(fullPath)` accepts; nothing when `dir` is missing. */
function walk(dir, keep, skipped = SKIPPED) {
  if (!fs.existsSync(dir)) return [];
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!skipped.has(entry.name)) out.push(...walk(full, keep, skipped));
    } else if (keep(full)) {
      out.push(full);
    }
  }
  return out;
}

/** TypeScript sources, not specs nor declarations. */
const isTypeScriptSource = (file) => file.endsWith('.ts') && !/\.(spec|d)\.ts$/.test(file);

module.exports = { SKIPPED, isTypeScriptSource, walk };
