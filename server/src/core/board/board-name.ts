import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { git } from '../git/git';

/** The configured board name that means "the board of this repository's origin". */
export const ORIGIN_BOARD = 'origin';
const MAX_NAME = 200;

/**
 * An origin URL as a board name every clone of the repository agrees on, whatever way it was
 * cloned: scheme, credentials, port, a trailing `.git` and `/`, and case dropped.
 * `git@github.com:Acme/App.git`, `https://tok@github.com/acme/app` and `ssh://git@github.com:22/acme/app.git`
 * all give `github.com/acme/app`; a path (`/srv/git/app.git`, `file:///srv/git/app.git`) gives `srv/git/app`.
 */
export function boardNameFromOrigin(url: string): string {
  let rest = url.trim();
  let host = '';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(rest);
  if (scheme) {
    const afterScheme = scheme[2] ?? '';
    if (scheme[1]?.toLowerCase() === 'file') {
      rest = afterScheme;
    } else {
      const slash = afterScheme.indexOf('/');
      const authority = slash < 0 ? afterScheme : afterScheme.slice(0, slash);
      rest = slash < 0 ? '' : afterScheme.slice(slash);
      host = authority.replace(/^.*@/, '').replace(/:\d*$/, '');
    }
  } else {
    // scp-like `user@host:path` (git's own rule: a colon before any slash).
    const scp = /^(?:[^@/]+@)?([^:/]+):(.*)$/.exec(rest);
    if (scp) {
      host = scp[1] ?? '';
      rest = scp[2] ?? '';
    }
  }
  const tail = rest
    .replace(/\\/g, '/')
    .replace(/\/+$/, '')
    .replace(/\.git$/i, '')
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');
  const name = [host, tail]
    .filter((part) => part !== '')
    .join('/')
    .toLowerCase()
    .replace(/[^a-z0-9._:/@+~-]/g, '-');
  if (name === '' || !/^[a-z0-9]/.test(name)) {
    throw new Error(`cannot name a board after the origin URL ${JSON.stringify(url)}`);
  }
  return Array.from(name).slice(0, MAX_NAME).join('');
}

/** A board's schema: one per board name on a server, a valid identifier whatever the name. */
export function boardSchema(name: string): string {
  return `am_board_${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/**
 * The runner id of this manager: stable across its restarts (so a restart finds its own
 * Requirements and reconciles their orphans), distinct for every machine and clone.
 */
export function runnerIdOf(workspaceKey: string, host = os.hostname()): string {
  return `rnr_${createHash('sha256').update(`${host}\u0000${workspaceKey}`).digest('hex').slice(0, 16)}`;
}

/**
 * The board this workspace joins. A configured name is used as given. `origin` is resolved from
 * the repository's `remote.origin.url` once and kept in the data directory (`board-name`): the
 * repository's configuration is shared with every agent's worktree, and an agent that rewrote its
 * origin must not move the person's manager to another board at the next start.
 */
export async function resolveBoardName(
  configured: string,
  workspaceRoot: string,
  dataDirectory: string,
): Promise<{ name: string; pinned: boolean }> {
  if (configured !== ORIGIN_BOARD) {
    return { name: configured, pinned: false };
  }
  const pinFile = path.join(dataDirectory, 'board-name');
  const pinned = readPin(pinFile);
  if (pinned !== null) {
    return { name: pinned, pinned: true };
  }
  const result = await git(['config', '--get', 'remote.origin.url'], {
    cwd: workspaceRoot,
    maxBytes: 4096,
    okCodes: [0, 1],
    timeoutMs: 10_000,
  }).catch(() => null);
  const url = result?.code === 0 ? result.stdout.trim() : '';
  if (url === '') {
    throw new Error(
      `--board without a name needs a repository with an origin remote (${workspaceRoot} has none): name the board, e.g. --board my-team`,
    );
  }
  const name = boardNameFromOrigin(url);
  fs.mkdirSync(dataDirectory, { mode: 0o700, recursive: true });
  fs.writeFileSync(pinFile, `${name}\n`, { mode: 0o600 });
  return { name, pinned: false };
}

function readPin(file: string): string | null {
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    return text === '' ? null : text;
  } catch {
    return null;
  }
}
