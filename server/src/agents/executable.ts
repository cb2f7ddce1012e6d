import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Provider } from '@libs/contracts';

/**
 * Where `command` would be run from, as `execvp` finds it: a name is looked up in `searchPath`,
 * anything with a slash is taken relative to `cwd`. Null when there is no executable file there.
 * Checked before spawning because a missing CLI otherwise surfaces as a bare `spawn codex
 * ENOENT`, or inside the sandbox as bubblewrap's own exec error, neither of which says what to do.
 */
export function findExecutable(command: string, searchPath: string, cwd: string): string | null {
  const candidates = command.includes('/')
    ? [path.resolve(cwd, command)]
    : searchPath
        .split(path.delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => path.resolve(cwd, dir, command));
  for (const candidate of candidates) {
    try {
      if (fs.statSync(candidate).isFile()) {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      }
    } catch {
      // not there, or not executable: try the next one
    }
  }
  return null;
}

const CLIS: Record<Provider, { name: string; install: string; setting: string }> = {
  'claude-code': { install: 'npm i -g @anthropic-ai/claude-code', name: 'Claude Code', setting: 'claudeExecutable' },
  codex: { install: 'npm i -g @openai/codex', name: 'Codex CLI', setting: 'codexExecutable' },
};

/** The sentence a run fails with when its CLI is not there: which program, and how to fix it. */
export function cliNotFoundMessage(provider: Provider, executable: string): string {
  const cli = CLIS[provider];
  const where = executable.includes('/') ? 'was not found (or is not executable)' : 'was not found on PATH';
  return `${cli.name} (\`${executable}\`) ${where}. Install it (${cli.install}) or set ${cli.setting} in the configuration.`;
}
