import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { isRunning } from '../core/process-table';
import { ProcessSpec, runProcess } from './process-runner';

const SCRIPT = path.resolve(__dirname, '../../../test/fixtures/processes/tree.js');

async function start(mode: string, overrides: Partial<ProcessSpec> = {}) {
  const lines: Array<{ line: string; truncatedFrom?: number }> = [];
  const run = await runProcess({
    args: [SCRIPT, mode],
    command: process.execPath,
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '' },
    inactivityTimeoutMs: 10_000,
    marker: `test-${mode}-${Math.random().toString(16).slice(2)}`,
    onLine: (line, truncatedFrom) => lines.push({ line, truncatedFrom }),
    stdin: '',
    ...overrides,
  });
  return { lines, run };
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error('condition not met in time');
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('runProcess', () => {
  it('reads partial, garbage and over-long lines without losing the ones after them', async () => {
    const { lines, run } = await start('lines', { maxLineBytes: 1024 });
    const end = await run.finished;
    expect(end).toMatchObject({ code: 0, reason: 'exited' });
    expect(lines.map((l) => l.line.slice(0, 12))).toEqual([
      '{"a":1}',
      'not json at ',
      '{"big":"xxxx',
      '{"after":tru',
      '{"no-newline',
    ]);
    expect(lines[2].line).toHaveLength(1024);
    expect(lines[2].truncatedFrom).toBe(2 * 1024 * 1024 + 10);
    expect(lines[3].truncatedFrom).toBeUndefined();
  });

  it('sends the prompt on stdin and keeps only the tail of stderr', async () => {
    const echo = await start('stdin', { stdin: 'line one\nline "two"\n' });
    await echo.run.finished;
    expect(JSON.parse(echo.lines[0].line)).toEqual({ stdin: 'line one\nline "two"\n' });

    const noisy = await start('stderr');
    const end = await noisy.run.finished;
    expect(end.code).toBe(3);
    expect(end.stderr.length).toBeLessThanOrEqual(8 * 1024);
    expect(end.stderr.endsWith('THE END')).toBe(true);
  });

  it('ends a run that goes quiet for the inactivity window, and lets a chatty one finish', async () => {
    const quiet = await start('quiet', { inactivityTimeoutMs: 300 });
    const end = await quiet.run.finished;
    expect(end.reason).toBe('timed_out');
    expect(isRunning(quiet.run.pid!)).toBe(false);

    const chatty = await start('chatty', { inactivityTimeoutMs: 2000 }); // prints every 100 ms for 5 s
    expect((await chatty.run.finished).reason).toBe('exited');
  });

  it('ends the whole tree on interrupt: children in other sessions, grandchildren, scrubbed environments', async () => {
    const { lines, run } = await start('tree');
    await until(() => lines.length > 0);
    const pids = JSON.parse(lines[0].line) as Record<string, number>;
    for (const pid of Object.values(pids)) {
      expect(isRunning(pid)).toBe(true);
    }
    const end = await run.interrupt();
    expect(end.reason).toBe('interrupted');
    for (const pid of Object.values(pids)) {
      expect(isRunning(pid)).toBe(false);
    }
  });

  it('ends what an exited CLI left behind (Codex leaves tool children running)', async () => {
    const { lines, run } = await start('orphan');
    await run.finished;
    const { orphan } = JSON.parse(lines[0].line) as { orphan: number };
    expect(isRunning(orphan)).toBe(false);
  });

  it('reports a CLI that cannot be started', async () => {
    const run = await runProcess({
      args: [],
      command: '/definitely/not/a/cli',
      cwd: process.cwd(),
      env: {},
      inactivityTimeoutMs: 1000,
      marker: 'missing',
      onLine: () => undefined,
      stdin: 'x',
    });
    const end = await run.finished;
    expect(end.reason).toBe('spawn_failed');
    expect(end.stderr).toContain('ENOENT');
  });

  it('runs the agent, and everything it starts, below the manager’s CPU priority', async () => {
    // What a tool command of the run sees: its niceness (field 19 of stat) and its session's scheduling group.
    const { lines, run } = await start('-', {
      // The session's group is lowered just after the exec: a command this quick waits for it (at most 5 s).
      args: [
        '-c',
        'cut -d" " -f19 /proc/self/stat; for i in $(seq 50); do grep -qs " nice 10$" /proc/self/autogroup && break; sleep 0.1; done; cat /proc/self/autogroup 2>/dev/null || echo none',
      ],
      command: '/bin/sh',
    });
    expect(await run.finished).toMatchObject({ code: 0, reason: 'exited' });
    const [niceness, group] = lines.map((l) => l.line);
    expect(Number(niceness)).toBe(Math.min(19, os.getPriority() + 10));
    if (fs.existsSync('/proc/self/autogroup')) {
      expect(group).toMatch(/ nice 10$/); // this kernel schedules sessions as groups: the run's group is lowered too
      expect(fs.readFileSync('/proc/self/autogroup', 'utf8')).not.toMatch(/ nice 10$/);
    } else {
      expect(group).toBe('none');
    }
  });
});
