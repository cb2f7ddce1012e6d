import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The project root (the folder of our package.json), found by walking up from this file, so it
 * works from the TypeScript sources (tests), from the build in dist/ and from an installed
 * package alike. Recognised by the `agent-manager` bin it declares, not by the package name.
 */
export function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        bin?: Record<string, string>;
      };
      if (pkg.bin?.['agent-manager'] !== undefined) {
        return dir;
      }
    } catch {
      // not here
    }
    const parent = path.dirname(dir);
    if (parent === dir) {
      throw new Error('cannot find the agent-manager package root');
    }
    dir = parent;
  }
}

export function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** Where `ng build` puts the dashboard. */
export function dashboardDirectory(): string {
  return path.join(packageRoot(), 'dist', 'dashboard', 'browser');
}
