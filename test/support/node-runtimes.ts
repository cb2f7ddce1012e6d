import * as fs from 'node:fs';
import * as path from 'node:path';

import { ROOT } from './manager-process';

/**
 * The pinned Node.js builds of test/node-runtimes (installed by scripts/test.js): the oldest line
 * `engines` declares and the maintained LTS lines. npm installs only this machine's os/cpu build.
 */
export const ALL_NODE_LINES = [20, 22, 24, 26] as const;
export type NodeLine = (typeof ALL_NODE_LINES)[number];
const pinned = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'test', 'node-runtimes', 'package.json'), 'utf8')) as {
    optionalDependencies: Record<string, string>;
  }
).optionalDependencies;
/** The lines pinned for this machine's cpu: every line on x64 (what CI runs); 24 and 26 on arm64, which has no build of 20.19.1 or 22.13.0. */
export const NODE_LINES = ALL_NODE_LINES.filter((line) => `node${line}-${process.arch}` in pinned);

export function nodeRuntime(line: NodeLine): string {
  const executable = path.join(
    ROOT,
    'test',
    'node-runtimes',
    'node_modules',
    `node${line}-${process.arch}`,
    'bin',
    'node',
  );
  if (!fs.existsSync(executable)) {
    throw new Error(`Node.js ${line} for ${process.arch} is not installed: npm ci --prefix test/node-runtimes`);
  }
  return executable;
}
