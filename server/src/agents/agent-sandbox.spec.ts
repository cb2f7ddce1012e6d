import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ConfigurationService } from '../core/configuration/configuration.service';
import type { Runtime } from '../core/runtime';
import { resolveWorkspace } from '../core/workspace/workspace';
import { isRunning } from '../core/process-table';
import { AgentSandbox, bubblewrapOptions } from './agent-sandbox';
import { findRunProcesses } from './process-tree';
import { runProcess } from './process-runner';

const HAS_BWRAP = process.platform === 'linux' && fs.existsSync('/usr/bin/bwrap');

interface Fixture {
  base: string;
  runtime: Runtime;
  token: string;
  attachment: string;
  other: string;
}

/** A real home and workspace in a temp directory, with a token and two attachments on disk. */
function fixture(agentIsolation: 'auto' | 'off' = 'auto'): Fixture {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-sandbox-')));
  fs.mkdirSync(path.join(base, 'repo'));
  const paths = resolveWorkspace(path.join(base, 'repo'), path.join(base, 'home'));
  fs.writeFileSync(paths.lockPath, '{}');
  const token = path.join(paths.dataDirectory, 'token');
  fs.writeFileSync(token, 'a'.repeat(64));
  const attachment = path.join(paths.attachmentsDirectory, 'att_one.txt');
  const other = path.join(paths.attachmentsDirectory, 'att_other.txt');
  fs.writeFileSync(attachment, 'mine');
  fs.writeFileSync(other, 'not mine');
  const configuration = new ConfigurationService(paths.defaultConfigPath, { agentIsolation });
  return { attachment, base, other, runtime: { configuration, paths } as Partial<Runtime> as Runtime, token };
}

async function started(f: Fixture): Promise<AgentSandbox> {
  const sut = new AgentSandbox(f.runtime.configuration, f.runtime);
  await sut.onModuleInit();
  return sut;
}

async function withPath<T>(dir: string, action: () => Promise<T>): Promise<T> {
  const before = process.env.PATH;
  process.env.PATH = `${dir}${path.delimiter}${before ?? ''}`;
  try {
    return await action();
  } finally {
    process.env.PATH = before;
  }
}

describe(AgentSandbox.name, () => {
  const made: string[] = [];
  const make = (mode?: 'auto' | 'off') => {
    const f = fixture(mode);
    made.push(f.base);
    return f;
  };
  afterAll(() => made.forEach((dir) => fs.rmSync(dir, { force: true, recursive: true })));

  it('builds the bubblewrap options: whole root, new PID namespace and /proc, hidden trees, own attachments read-only', () => {
    const f = make();
    const hidden = path.join(f.runtime.paths.home, 'workspaces');
    expect(bubblewrapOptions({ cwd: '/repo', hidden: [hidden], readOnlyFiles: [f.attachment, f.attachment, path.join(hidden, 'gone.txt'), '/etc/hostname'] })).toEqual([
      '--dev-bind',
      '/',
      '/',
      '--unshare-pid',
      '--proc',
      '/proc',
      '--cap-drop',
      'CAP_SYS_ADMIN',
      '--cap-drop',
      'CAP_DAC_READ_SEARCH',
      '--tmpfs',
      hidden,
      // once, existing files inside the hidden tree only
      '--ro-bind',
      f.attachment,
      f.attachment,
      '--chdir',
      '/repo',
    ]);
  });

  it('binds the working directory back when it lies inside a hidden tree', () => {
    expect(bubblewrapOptions({ cwd: '/h/workspaces/k/wt', hidden: ['/h/workspaces'], readOnlyFiles: [] })).toEqual(
      expect.arrayContaining(['--tmpfs', '/h/workspaces', '--bind', '/h/workspaces/k/wt', '/h/workspaces/k/wt', '--chdir', '/h/workspaces/k/wt']),
    );
    expect(bubblewrapOptions({ cwd: '/h/workspaces-other', hidden: ['/h/workspaces'], readOnlyFiles: [] })).not.toContain('--bind');
  });

  it('with agentIsolation "off" runs commands unchanged and says why', async () => {
    const sut = await started(make('off'));
    expect(sut.status).toEqual({ enabled: false, mechanism: null, reason: 'agentIsolation is "off" in the configuration' });
    expect(sut.wrap('/usr/bin/codex', ['exec'], { cwd: '/repo', readOnlyFiles: [] })).toEqual({ args: ['exec'], command: '/usr/bin/codex' });
  });

  it('reports a bubblewrap that refuses (no user namespaces) with its own words, and leaves commands alone', async () => {
    const f = make();
    const bin = path.join(f.base, 'fake-bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n', { mode: 0o755 });
    const sut = await withPath(bin, () => started(f));
    expect(sut.status).toEqual({
      enabled: false,
      mechanism: null,
      reason: 'bubblewrap cannot create the sandbox here (bwrap: No permissions to creating new namespace); user namespaces may be disabled or restricted',
    });
    expect(sut.wrap('codex', [], { cwd: '/repo', readOnlyFiles: [] })).toEqual({ args: [], command: 'codex' });
  });

  it('reports a bubblewrap that starts but does not hide the data directory', async () => {
    const f = make();
    const bin = path.join(f.base, 'fake-bin');
    fs.mkdirSync(bin);
    // Runs the command as is: the lock file stays visible.
    fs.writeFileSync(path.join(bin, 'bwrap'), '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n', { mode: 0o755 });
    const sut = await withPath(bin, () => started(f));
    expect(sut.status).toEqual({ enabled: false, mechanism: null, reason: `bubblewrap started but did not hide ${f.runtime.paths.lockPath}` });
  });

  (HAS_BWRAP ? it : it.skip)('runs a process that cannot see the data directory but reads its attachment, in its cwd, and is killed as a tree', async () => {
    const f = make();
    const sut = await started(f);
    expect(sut.status).toEqual({ enabled: true, mechanism: 'bubblewrap', reason: null });
    const script = [
      'set -e',
      `test ! -e ${f.token}`,
      `test ! -e ${f.other}`,
      `test "$(cat ${f.attachment})" = mine`,
      `! sh -c 'echo x > ${f.attachment}' 2>/dev/null`,
      `test "$(pwd)" = ${f.runtime.paths.root}`,
      // Only the sandbox's own processes are in its /proc: no way into the manager's mounts.
      `test ! -e /proc/${process.pid}/root${f.token}`,
      'echo ready',
      'sleep 60 & sleep 60',
    ].join('\n');
    const wrapped = sut.wrap('/bin/sh', ['-c', script], { cwd: f.runtime.paths.root, readOnlyFiles: [f.attachment] });
    expect(wrapped.command).toBe('/usr/bin/bwrap');
    const lines: string[] = [];
    const marker = `sandbox-test-${process.pid}`;
    const run = runProcess({
      ...wrapped,
      cwd: f.runtime.paths.root,
      env: { PATH: process.env.PATH ?? '' },
      inactivityTimeoutMs: 30_000,
      marker,
      onLine: (l) => lines.push(l),
      stdin: '',
    });
    const deadline = Date.now() + 20_000;
    while (!lines.includes('ready') && Date.now() < deadline) {
      if (await Promise.race([run.finished.then(() => true), new Promise((r) => setTimeout(() => r(false), 20))])) {
        break;
      }
    }
    expect(lines).toEqual(['ready']);
    const pids = findRunProcesses(marker, run.pid);
    expect(pids.length).toBeGreaterThanOrEqual(3); // bwrap, its init, sh, the sleeps
    await expect(run.interrupt()).resolves.toMatchObject({ reason: 'interrupted' });
    expect(pids.filter(isRunning)).toEqual([]);
  });
});
