import * as fs from 'node:fs';
import * as path from 'node:path';

import { ROOT } from './manager-process';

/**
 * The pinned Node.js builds of test/node-runtimes (installed by scripts/test.js): the oldest line
 * `engines` declares and the maintained LTS lines. npm installs only this machine's os/cpu build.
 */
export const NODE_LINES = [20, 22, 24, 26] as const;
export type NodeLine = (typeof NODE_LINES)[number];

export function nodeRuntime(line: NodeLine): string {
  const executable = path.join(ROOT, 'test', 'node-runtimes', 'node_modules', `node${line}-${process.arch}`, 'bin', 'node');
  if (!fs.existsSync(executable)) {
    throw new Error(`Node.js ${line} for ${process.arch} is not installed: npm ci --prefix test/node-runtimes`);
  }
  return executable;
}
