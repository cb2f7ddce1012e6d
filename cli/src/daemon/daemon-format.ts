import { loginUrl, readToken } from '@server/auth/local-token';
import type { WorkspacePaths } from '@server/core/workspace/workspace';

import type { DetachedStart } from './daemon-control';

export function formatUptime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const parts: string[] = [];
  const units: Array<[number, string]> = [
    [86_400, 'd'],
    [3_600, 'h'],
    [60, 'm'],
  ];
  let rest = s;
  for (const [size, unit] of units) {
    if (rest >= size || parts.length > 0) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  parts.push(`${rest}s`);
  return parts.join(' ');
}

export function rows(entries: Array<[string, string]>): string {
  return entries.map(([key, value]) => `  ${key.padEnd(12)}${value}`).join('\n');
}

/**
 * The dashboard login link for whoever started a detached manager, read from the token file, but
 * only when our output is a terminal: the manager's own banner no longer carries it (its output
 * is daemon.log), and output that is not a terminal is a log too (a service's journal, `| tee`).
 */
export function terminalLoginUrl(
  paths: Pick<WorkspacePaths, 'tokenPath'>,
  url: string | null,
  terminal = process.stdout.isTTY === true,
): string | null {
  const token = terminal && url !== null ? readToken(paths.tokenPath) : null;
  return token === null || url === null ? null : loginUrl(url, token);
}

/** What `start --detach` prints: where it runs, and how to reach and stop it. */
export function formatDetachedStart({ alreadyRunning, state }: DetachedStart, login: string | null = null): string {
  return [
    `Agent Manager is ${alreadyRunning ? 'already running' : 'running'} in the background for ${state.workspace}`,
    rows([
      ['URL', state.url ?? '(none yet)'],
      ['API', `${state.url}/api`],
      ...(login !== null ? ([['Dashboard', login]] as Array<[string, string]>) : []),
      ['PID', `${state.managerPid} (supervisor ${state.supervisorPid})`],
      ['Log', state.logPath],
    ]),
    login !== null
      ? '  Open the Dashboard link to log in; `agent-manager stop` stops it.'
      : '  `agent-manager token` prints the dashboard login URL; `agent-manager stop` stops it.',
    '',
  ].join('\n');
}
