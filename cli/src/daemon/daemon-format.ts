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

/** What `start --detach` prints: where it runs, and how to reach and stop it. */
export function formatDetachedStart({ alreadyRunning, state }: DetachedStart): string {
  return [
    `Agent Manager is ${alreadyRunning ? 'already running' : 'running'} in the background for ${state.workspace}`,
    rows([
      ['URL', state.url ?? '(none yet)'],
      ['API', `${state.url}/api`],
      ['PID', `${state.managerPid} (supervisor ${state.supervisorPid})`],
      ['Log', state.logPath],
    ]),
    '  `agent-manager token` prints the dashboard login URL; `agent-manager stop` stops it.',
    '',
  ].join('\n');
}
