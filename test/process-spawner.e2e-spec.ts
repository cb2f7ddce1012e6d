import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import type * as BoundedProcess from '../server/src/core/process/bounded-process';
import type * as ProcessRunner from '../server/src/agents/process-runner';
import type * as Spawner from '../server/src/core/process/spawner';
import { ROOT } from './support/manager-process';
import { until } from './support/wait';

/**
 * The manager starts git (and every short-lived program) from its spawner process, not from its
 * event loop (issue 30). The built modules are what the manager runs, so they are what is
 * proven here: programs really are the spawner's children, results are what `runBounded` gave
 * before, and a spawner that dies, or a manager that dies, leaves nothing running unwatched.
 */
const BUILT = path.join(ROOT, 'dist', 'server', 'src', 'core', 'process');
const { runBounded } = require(path.join(BUILT, 'bounded-process.js')) as typeof BoundedProcess;
const { spawner } = require(path.join(BUILT, 'spawner.js')) as typeof Spawner;
const { runProcess } = require(
  path.join(ROOT, 'dist', 'server', 'src', 'agents', 'process-runner.js'),
) as typeof ProcessRunner;
const TREE = path.join(ROOT, 'test', 'fixtures', 'processes', 'tree.js');

const alive = (pid: number) => {
  try {
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z');
  } catch {
    return false;
  }
};
/** The process whose argv[0] is `name` (0 when none). */
const processNamed = (name: string) => {
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1').startsWith(`${name}\0`)) {
        return Number(entry);
      }
    } catch {
      // gone meanwhile
    }
  }
  return 0;
};
const parentOf = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);

/** The project's `until`, for a synchronous check. */
const waitFor = (what: string, check: () => boolean) => until(what, async () => check() || undefined, 10_000);

const quick = { cwd: ROOT, maxBytes: 1024, timeoutMs: 10_000 };

describe('the process spawner', () => {
  it('starts programs as its own children, with the environment and limits each call gives', async () => {
    const result = await runBounded(
      '/bin/sh',
      ['-c', 'echo "$PPID $AM_SPAWNER_CHECK ${NODE_CHANNEL_FD:-none}"; echo oops >&2; exit 3'],
      {
        ...quick,
        env: { AM_SPAWNER_CHECK: 'given', PATH: '/usr/bin:/bin' },
      },
    );
    const spawnerPid = spawner.pid as number;
    expect(spawnerPid).not.toBeNull();
    expect(spawnerPid).not.toBe(process.pid);
    expect(parentOf(spawnerPid)).toBe(process.pid);
    expect(result).toMatchObject({ code: 3, error: null, stderr: 'oops\n', timedOut: false, truncated: false });
    expect(Buffer.isBuffer(result.stdout)).toBe(true);
    expect(result.stdout.toString()).toBe(`${spawnerPid} given none\n`);
    // The spawner's own environment carries nothing of the manager's but PATH (Node adds its channel's).
    const environ = fs.readFileSync(`/proc/${spawnerPid}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environ.map((entry) => entry.split('=')[0]).sort()).toEqual([
      'NODE_CHANNEL_FD',
      'NODE_CHANNEL_SERIALIZATION_MODE',
      'PATH',
    ]);
  });

  it('keeps the bounds: output cut at maxBytes, a program past its time killed, a missing program an error', async () => {
    const cut = await runBounded('/bin/sh', ['-c', 'yes | head -c 100000; sleep 30'], { ...quick, maxBytes: 10 });
    expect(cut).toMatchObject({ signal: 'SIGKILL', truncated: true });
    expect(cut.stdout.toString()).toBe('y\ny\ny\ny\ny\n');
    const slow = await runBounded('/bin/sleep', ['30'], { ...quick, timeoutMs: 300 });
    expect(slow).toMatchObject({ signal: 'SIGKILL', timedOut: true });
    const missing = await runBounded('/definitely/not/a/program', [], quick);
    expect(missing.error).toContain('ENOENT');
  });

  it('when the spawner is killed, lets its programs finish (or end at their time limit), answers their calls as lost, and starts a new one', async () => {
    const finishing = `am-finishing-${process.pid}`;
    const hanging = `am-hanging-${process.pid}`;
    // One that finishes on its own a little later (a git moving a checkout must not be killed
    // half way), one that would run past its time limit (killed then, as the spawner would have).
    const finishes = runBounded('/bin/bash', ['-c', `exec -a ${finishing} sleep 2`], quick);
    const hangs = runBounded('/bin/bash', ['-c', `exec -a ${hanging} sleep 60`], { ...quick, timeoutMs: 4_000 });
    let first = 0;
    let second = 0;
    await waitFor('both programs to start', () => {
      first = processNamed(finishing);
      second = processNamed(hanging);
      return first > 0 && second > 0;
    });
    const killed = spawner.pid as number;
    process.kill(killed, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    expect({ first: alive(first), second: alive(second) }).toEqual({ first: true, second: true });
    expect(await finishes).toMatchObject({ code: null, error: 'the process spawner exited', signal: null });
    expect(alive(first)).toBe(false);
    expect(await hangs).toMatchObject({ code: null, error: 'the process spawner exited', signal: 'SIGKILL' });
    await waitFor('the program past its time limit to be ended', () => !alive(second));
    const next = await runBounded('/bin/echo', ['again'], quick);
    expect(next.stdout.toString()).toBe('again\n');
    expect(spawner.pid).not.toBe(killed);
  });

  it('leaves with the process that started it; what it runs goes on, as it did when the manager started it itself', async () => {
    const marker = `am-orphan-${process.pid}`;
    const script = `
      const { runBounded } = require(${JSON.stringify(path.join(BUILT, 'bounded-process.js'))});
      const { spawner } = require(${JSON.stringify(path.join(BUILT, 'spawner.js'))});
      runBounded('/bin/bash', ['-c', 'exec -a ${marker} sleep 60'], { cwd: '/', maxBytes: 10, timeoutMs: 60000 });
      setTimeout(() => console.log(spawner.pid), 200);
      setInterval(() => undefined, 1000);`;
    const owner = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let sleeper = 0;
    try {
      const spawnerPid = await new Promise<number>((resolve) =>
        owner.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
      );
      await waitFor('the program to start', () => {
        sleeper = processNamed(marker);
        return sleeper > 0;
      });
      expect(alive(spawnerPid)).toBe(true);
      owner.kill('SIGKILL');
      await waitFor('the spawner to leave with its owner', () => !alive(spawnerPid));
      expect(alive(sleeper)).toBe(true);
    } finally {
      owner.kill('SIGKILL');
      if (sleeper > 0) {
        process.kill(sleeper, 'SIGKILL');
      }
    }
  });

  describe('an agent CLI (a streaming program: its pipes are handed to the manager)', () => {
    const agent = async (mode: string, stdin = '', command = process.execPath) => {
      const lines: string[] = [];
      const run = await runProcess({
        args: [TREE, mode],
        command,
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '' },
        inactivityTimeoutMs: 30_000,
        marker: `spawner-${mode}-${Math.random().toString(16).slice(2)}`,
        onLine: (line) => lines.push(line),
        stdin,
      });
      return { lines, run };
    };

    it('runs as the spawner’s child, reads its input, and reports its output, stderr and exit', async () => {
      const echo = await agent('stdin', 'line one\nline two\n');
      expect(parentOf(echo.run.pid as number)).toBe(spawner.pid);
      expect(await echo.run.finished).toMatchObject({ code: 0, reason: 'exited' });
      expect(echo.lines).toEqual([JSON.stringify({ stdin: 'line one\nline two\n' })]);
      const noisy = await agent('stderr');
      const end = await noisy.run.finished;
      expect(end).toMatchObject({ code: 3, reason: 'exited', signal: null });
      expect(end.stderr.endsWith('THE END')).toBe(true);
      const missing = await agent('stdin', '', '/definitely/not/a/cli');
      expect(await missing.run.finished).toMatchObject({
        reason: 'spawn_failed',
        stderr: expect.stringContaining('ENOENT'),
      });
    });

    it('loses nothing of a program that writes at once and exits before its pipes reached the manager (50 at once)', async () => {
      const runs = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const lines: string[] = [];
          const run = await runProcess({
            args: ['-c', `echo out ${i}; echo err ${i} >&2; exit 3`],
            command: '/bin/sh',
            cwd: ROOT,
            env: { PATH: process.env.PATH ?? '' },
            inactivityTimeoutMs: 30_000,
            marker: `spawner-fast-${i}-${Math.random().toString(16).slice(2)}`,
            onLine: (line) => lines.push(line),
            stdin: '',
          });
          return { end: await run.finished, i, lines };
        }),
      );
      expect(runs.map(({ end, i, lines }) => ({ code: end.code, i, lines, stderr: end.stderr }))).toEqual(
        runs.map(({ i }) => ({ code: 3, i, lines: [`out ${i}`], stderr: `err ${i}\n` })),
      );
    });

    it('ends the whole tree on interrupt', async () => {
      const { lines, run } = await agent('tree');
      await waitFor('the tree to start', () => lines.length > 0);
      const tree = JSON.parse(lines[0]) as Record<string, number>;
      expect(await run.interrupt()).toMatchObject({ reason: 'interrupted' });
      expect(Object.values(tree).filter(alive)).toEqual([]);
    });

    it('goes on when the spawner dies under it, and its end is still reported once it is gone', async () => {
      const { lines, run } = await agent('chatty');
      await waitFor('its first output', () => lines.length > 0);
      process.kill(spawner.pid as number, 'SIGKILL');
      const seen = lines.length;
      await waitFor('more output after the spawner died', () => lines.length > seen + 2);
      const end = await run.finished;
      expect(end).toMatchObject({
        code: null,
        reason: 'exited',
        stderr: expect.stringContaining('its exit status was lost with the process spawner'),
      });
      expect(alive(run.pid as number)).toBe(false);
    });
  });
});
