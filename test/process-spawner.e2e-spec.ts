import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import type * as BoundedProcess from '../server/src/core/git/bounded-process';
import type * as Spawner from '../server/src/core/git/spawner';
import { ROOT } from './support/manager-process';

/**
 * The manager starts git (and every short-lived program) from its spawner process, not from its
 * event loop (issue 30). The built modules are what the manager runs, so they are what is
 * proven here: programs really are the spawner's children, results are what `runBounded` gave
 * before, and a spawner that dies, or a manager that dies, leaves nothing running unwatched.
 */
const BUILT = path.join(ROOT, 'dist', 'server', 'src', 'core', 'git');
const { runBounded } = require(path.join(BUILT, 'bounded-process.js')) as typeof BoundedProcess;
const { spawner } = require(path.join(BUILT, 'spawner.js')) as typeof Spawner;

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

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const quick = { cwd: ROOT, maxBytes: 1024, timeoutMs: 10_000 };

describe('the process spawner', () => {
  it('starts programs as its own children, with the environment and limits each call gives', async () => {
    const result = await runBounded('/bin/sh', ['-c', 'echo "$PPID $AM_SPAWNER_CHECK ${NODE_CHANNEL_FD:-none}"; echo oops >&2; exit 3'], {
      ...quick,
      env: { AM_SPAWNER_CHECK: 'given', PATH: '/usr/bin:/bin' },
    });
    const spawnerPid = spawner.pid as number;
    expect(spawnerPid).not.toBeNull();
    expect(spawnerPid).not.toBe(process.pid);
    expect(parentOf(spawnerPid)).toBe(process.pid);
    expect(result).toMatchObject({ code: 3, error: null, stderr: 'oops\n', timedOut: false, truncated: false });
    expect(Buffer.isBuffer(result.stdout)).toBe(true);
    expect(result.stdout.toString()).toBe(`${spawnerPid} given none\n`);
    // The spawner's own environment carries nothing of the manager's but PATH (Node adds its channel's).
    const environ = fs.readFileSync(`/proc/${spawnerPid}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environ.map((entry) => entry.split('=')[0]).sort()).toEqual(['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE', 'PATH']);
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

  it('answers the calls of a spawner that was killed as killed, ends their programs, and starts a new one', async () => {
    const marker = `am-spawner-${process.pid}`;
    const call = runBounded('/bin/bash', ['-c', `exec -a ${marker} sleep 60`], quick);
    let sleeper = 0;
    await until('the program to start', () => {
      sleeper = processNamed(marker);
      return sleeper > 0;
    });
    const killed = spawner.pid as number;
    process.kill(killed, 'SIGKILL');
    const result = await call;
    expect(result).toMatchObject({ code: null, error: 'the process spawner exited', signal: 'SIGKILL' });
    await until('the orphaned program to be ended', () => !alive(sleeper));
    const next = await runBounded('/bin/echo', ['again'], quick);
    expect(next.stdout.toString()).toBe('again\n');
    expect(spawner.pid).not.toBe(killed);
  });

  it('leaves with the process that started it, and takes the programs it runs along', async () => {
    const marker = `am-orphan-${process.pid}`;
    const script = `
      const { runBounded } = require(${JSON.stringify(path.join(BUILT, 'bounded-process.js'))});
      const { spawner } = require(${JSON.stringify(path.join(BUILT, 'spawner.js'))});
      runBounded('/bin/bash', ['-c', 'exec -a ${marker} sleep 60'], { cwd: '/', maxBytes: 10, timeoutMs: 60000 });
      setTimeout(() => console.log(spawner.pid), 200);
      setInterval(() => undefined, 1000);`;
    const owner = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const spawnerPid = await new Promise<number>((resolve) => owner.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
      let sleeper = 0;
      await until('the program to start', () => {
        sleeper = processNamed(marker);
        return sleeper > 0;
      });
      expect(alive(spawnerPid)).toBe(true);
      owner.kill('SIGKILL');
      await until('the spawner to leave with its owner', () => !alive(spawnerPid));
      await until('its program to be ended with it', () => !alive(sleeper));
    } finally {
      owner.kill('SIGKILL');
    }
  });
});
