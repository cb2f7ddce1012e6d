'use strict';
// Preloaded (`node -r`) into a CLI process by test/cli-startup.e2e-spec.ts: on exit, writes the npm
// packages the process loaded to the file AM_LOADED_PACKAGES names, so the suite can say which
// commands start without the server's weight (the ORM, the drivers, Express, the MCP SDK).
const fs = require('node:fs');

const out = process.env.AM_LOADED_PACKAGES;
if (out) {
  process.on('exit', () => {
    const packages = new Set();
    for (const file of Object.keys(require.cache)) {
      // The last node_modules segment: a nested dependency is named as itself, not as its host.
      const match = /.*node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file);
      if (match) {
        packages.add(match[1].replace(/\\/g, '/'));
      }
    }
    fs.writeFileSync(out, JSON.stringify([...packages].sort()));
  });
}
