// Daemon mode: `agent-manager start --detach` and its supervisor, `status`, `stop`, `restart`,
// `logs [-f]`, driven through the built CLI with real processes and real signals.
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { allPids, environHas, isRunning } from '@server/core/process-table';
import { workspaceKey } from '@server/core/workspace/workspace';

import type { DaemonState } from '../cli/src/daemon/daemon-state';
import { apiClient, ok } from './support/api';
import { initRepository } from './support/git-repo';
import { registerToken } from './support/http';
import { ROOT, Sandbox, makeSandbox, runLauncher, startManager } from './support/manager-process';
import { until } from './support/wait';

const BIN = path.join(ROOT, 'bin', 'agent-manager.js');
/** Enough for a few managers to start one after another on a loaded machine. */
const SLOW = 180_000;
/** Whether a throwaway PostgreSQL cluster can be started here (its server programs are installed). */
const POSTGRES_AVAILABLE =
  spawnSync(process.execPath, [
    '-e',
    `process.exit(require(${JSON.stringify(path.join(ROOT, 'scripts', 'postgres-cluster.js'))}).available() ? 0 : 1)`,
  ]).status === 0;

describe('agent-manager daemon mode', () => {
  let sandbox: Sandbox;
  let dataDirectory: string;
  const followers: ChildProcess[] = [];

  const cli = (...args: string[]) => runLauncher(sandbox, [...args, '--workspace', sandbox.workspace]);
  const state = (): DaemonState =>
    JSON.parse(fs.readFileSync(path.join(dataDirectory, 'daemon.json'), 'utf8')) as DaemonState;
  const urlOf = (stdout: string): string => {
    const match = /URL\s+(http:\/\/\S+)/.exec(stdout);
    if (!match?.[1]) {
      throw new Error(`no URL in: ${stdout}`);
    }
    return match[1];
  };
  /** Every path under `dir`, relative and sorted ([] when it does not exist). */
  const tree = (dir: string): string[] =>
    fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).sort() : [];
  /** Runs the CLI on a pseudo-terminal (script(1)), as a person at a terminal would: its exit code and what it printed. */
  const onTerminal = (args: string[]): Promise<{ code: number | null; output: string }> =>
    new Promise((resolve) => {
      const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const child = spawn('script', ['-qec', quoted, '/dev/null'], {
        env: { ...process.env, CODE_FACTORY_HOME: sandbox.home, CODE_FACTORY_MODEL_CATALOG_REFRESH_HOURS: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('exit', (code) => resolve({ code, output: output.replace(/\r\n/g, '\n') }));
    });
  const managerLockPid = (): number | null => {
    try {
      return (JSON.parse(fs.readFileSync(path.join(dataDirectory, 'manager.lock'), 'utf8')) as { pid: number }).pid;
    } catch {
      return null;
    }
  };
  /** Waits for the supervisor to have a healthy manager other than `previousPid`. */
  const runningManager = (previousPid: number | null): Promise<DaemonState> =>
    until(
      'a healthy manager',
      async () => {
        const current = state();
        return current.status === 'running' && current.managerPid !== previousPid ? current : undefined;
      },
      60_000,
    );

  beforeEach(() => {
    sandbox = makeSandbox();
    dataDirectory = path.join(sandbox.home, 'workspaces', workspaceKey(fs.realpathSync(sandbox.workspace)));
  });

  afterEach(async () => {
    for (const follower of followers.splice(0)) {
      follower.kill('SIGKILL');
    }
    // Whatever a failed test left running: the supervisor first, so that nothing restarts.
    await cli('stop', '--timeout', '30');
    for (const file of ['daemon.json', 'manager.lock']) {
      try {
        const record = JSON.parse(fs.readFileSync(path.join(dataDirectory, file), 'utf8')) as {
          pid?: number;
          supervisorPid?: number;
          managerPid?: number;
        };
        for (const pid of [record.pid, record.supervisorPid, record.managerPid]) {
          if (pid && isRunning(pid)) {
            process.kill(pid, 'SIGKILL');
          }
        }
      } catch {
        // No such file.
      }
    }
    sandbox.cleanup();
  });

  it(
    'start --detach returns once the manager is healthy; status, logs and stop (which waits for the end) follow it',
    async () => {
      initRepository(sandbox.workspace);
      const started = await cli('start', '--detach', '--port', '0');
      expect(started.stderr).toBe('');
      expect(started.code).toBe(0);
      const url = urlOf(started.stdout);
      expect(started.stdout).toContain(`running in the background for ${fs.realpathSync(sandbox.workspace)}`);
      // Healthy already, with no waiting on our side.
      const health = await fetch(`${url}/api/health`);
      expect(health.status).toBe(200);
      const daemon = state();
      expect(daemon).toMatchObject({ restarts: 0, status: 'running', url });
      expect(daemon.managerPid).toBe(managerLockPid());
      expect(daemon.supervisorPid).not.toBe(daemon.managerPid);
      expect(started.stdout).toContain(`PID         ${daemon.managerPid} (supervisor ${daemon.supervisorPid})`);
      expect(started.stdout).toContain(`Log         ${path.join(dataDirectory, 'logs', 'daemon.log')}`);

      // An active run is counted: the idle agent keeps its run going until it is ended.
      const token = fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim();
      registerToken(url, token);
      const created = await ok(
        apiClient(url).POST('/api/requirements', { body: { provider: 'codex', title: 'keep running' } }),
      );
      expect(
        (
          await apiClient(url).POST('/api/requirements/{id}/start', {
            body: { message: 'go' },
            params: { path: { id: created.id } },
          })
        ).status,
      ).toBe(202);

      const status = await cli('status');
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`is running for ${fs.realpathSync(sandbox.workspace)}`);
      expect(status.stdout).toContain(`URL         ${url}`);
      expect(status.stdout).toContain(`PID         ${daemon.managerPid} (supervisor ${daemon.supervisorPid})`);
      expect(status.stdout).toMatch(/Uptime\s+(\d+m )?\d+s/);
      expect(status.stdout).toContain('Active runs 1');
      const json = await cli('status', '--json');
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({
        activeRuns: 1,
        pid: daemon.managerPid,
        restarts: 0,
        running: true,
        status: 'running',
        supervised: true,
        supervisorPid: daemon.supervisorPid,
        url,
      });

      const logs = await cli('logs');
      expect(logs.code).toBe(0);
      expect(logs.stdout).toContain(`[supervisor] manager healthy (pid ${daemon.managerPid}) at ${url}`);
      expect(logs.stdout).toContain(`API         ${url}/api`);
      expect((await cli('logs', '--lines', '1')).stdout.trim().split('\n')).toHaveLength(1);

      const stopped = await cli('stop');
      expect(stopped.code).toBe(0);
      expect(stopped.stdout).toContain(`supervisor pid ${daemon.supervisorPid}, manager pid ${daemon.managerPid}`);
      // Both are gone when stop returns, the graceful way: lock released, run ended, stop recorded.
      expect(isRunning(daemon.supervisorPid)).toBe(false);
      expect(isRunning(daemon.managerPid as number)).toBe(false);
      expect(fs.existsSync(path.join(dataDirectory, 'manager.lock'))).toBe(false);
      expect(state()).toMatchObject({ managerPid: null, status: 'stopped' });
      expect((await cli('logs')).stdout).toMatch(/manager \(pid \d+\) ended with exit code 0/);

      const after = await cli('status');
      expect(after.code).toBe(3);
      expect(after.stdout).toContain('is not running');
      expect(JSON.parse((await cli('status', '--json')).stdout)).toMatchObject({ pid: null, running: false });
      const again = await cli('stop');
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('is not running');
    },
    SLOW,
  );

  it('status exits 3, and logs says so, for a workspace that never ran one; status, stop, token, logs and doctor create nothing', async () => {
    // The whole home, and the workspace: a command that only reads leaves no trace in either.
    fs.mkdirSync(sandbox.home, { recursive: true });
    const before = { home: tree(sandbox.home), workspace: tree(sandbox.workspace) };
    expect(before.home).toEqual([]);
    const unchanged = (after: string) =>
      expect({ after, home: tree(sandbox.home), workspace: tree(sandbox.workspace) }).toEqual({ after, ...before });
    const status = await cli('status');
    expect(status.code).toBe(3);
    expect(status.stdout).toContain('Agent Manager is not running for');
    expect((await cli('status', '--json')).code).toBe(3);
    unchanged('status');
    const logs = await cli('logs');
    expect(logs.code).toBe(1);
    expect(logs.stderr).toMatch(/^agent-manager: no log at .*daemon\.log/);
    unchanged('logs');
    const stop = await cli('stop');
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain('Agent Manager is not running for');
    unchanged('stop');
    const token = await cli('token');
    expect(token.stderr).toBe(
      `agent-manager: no token yet for ${fs.realpathSync(sandbox.workspace)}: Agent Manager has not started for this workspace; start it first (\`agent-manager start\`)\n`,
    );
    expect(token.code).toBe(1);
    expect(token.stdout).toBe('');
    unchanged('token');
    // doctor with nothing to find quickly: no agent CLI, no GitHub to reach.
    const doctor = await runLauncher(sandbox, ['doctor', '--json', '--port', '0', '--workspace', sandbox.workspace], {
      CODE_FACTORY_CLAUDE_EXECUTABLE: 'no-such-claude',
      CODE_FACTORY_CODEX_EXECUTABLE: 'no-such-codex',
      CODE_FACTORY_GITHUB_API_URL: 'http://127.0.0.1:9',
      GH_TOKEN: '',
      GITHUB_TOKEN: 'none',
    });
    expect(doctor.stdout).toContain('"checks"');
    unchanged('doctor');
  });

  it(
    'keeps the token out of daemon.log and every other log after start --detach; the login link goes to a terminal only',
    async () => {
      const started = await cli('start', '--detach', '--port', '0');
      expect(started.code).toBe(0);
      const url = urlOf(started.stdout);
      const token = fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim();
      expect(token).toMatch(/^[0-9a-f]{64}$/);
      const logsDirectory = path.join(dataDirectory, 'logs');
      const logFiles = fs.readdirSync(logsDirectory);
      expect(logFiles).toEqual(expect.arrayContaining(['daemon.log', 'agent-manager.log']));
      const daemonLog = fs.readFileSync(path.join(logsDirectory, 'daemon.log'), 'utf8');
      // The banner is there, its Dashboard line without the link.
      expect(daemonLog).toContain(`Dashboard   ${url}/ (\`agent-manager token\` prints the login link)`);
      for (const file of logFiles) {
        expect({ file, holdsToken: fs.readFileSync(path.join(logsDirectory, file), 'utf8').includes(token) }).toEqual({
          file,
          holdsToken: false,
        });
      }
      const logs = await cli('logs', '--lines', '0');
      expect(logs.stdout).toContain(`API         ${url}/api`);
      expect(logs.stdout).not.toContain(token);
      expect(logs.stdout).not.toContain('?token=');
      // Our output here is a pipe (a log, as far as we know): no link either, but where to get it.
      expect(started.stdout).not.toContain(token);
      expect(started.stdout).toContain('`agent-manager token` prints the dashboard login URL');

      // On a terminal (script(1) gives it one), start --detach prints the link itself, from the token file.
      const again = await onTerminal(['start', '--detach', '--port', '0', '--workspace', sandbox.workspace]);
      expect(again.code).toBe(0);
      expect(again.output).toContain('already running in the background');
      expect(again.output).toContain(`Dashboard   ${url}/?token=${token}`);
      // Still nothing in the log.
      expect(fs.readFileSync(path.join(logsDirectory, 'daemon.log'), 'utf8')).not.toContain(token);
    },
    SLOW,
  );

  it(
    'restart gives a new manager (and supervisor) with the same arguments',
    async () => {
      const started = await cli('start', '--detach', '--port', '0', '--log-level', 'debug');
      expect(started.code).toBe(0);
      const first = state();
      const restarted = await cli('restart');
      expect(restarted.stderr).toBe('');
      expect(restarted.code).toBe(0);
      const second = state();
      expect(second.managerPid).not.toBe(first.managerPid);
      expect(second.supervisorPid).not.toBe(first.supervisorPid);
      expect(isRunning(first.managerPid as number)).toBe(false);
      expect(isRunning(first.supervisorPid)).toBe(false);
      expect(second.managerArgs).toEqual(['--port', '0', '--log-level', 'debug']);
      expect(second.managerPid).toBe(managerLockPid());
      expect((await fetch(`${urlOf(restarted.stdout)}/api/health`)).status).toBe(200);
      // restart also starts one that does not run.
      expect((await cli('stop')).code).toBe(0);
      const fromNothing = await cli('restart');
      expect(fromNothing.code).toBe(0);
      expect(state().managerArgs).toEqual(['--port', '0', '--log-level', 'debug']);
      expect((await cli('status')).code).toBe(0);
    },
    SLOW,
  );

  it(
    'restarts a manager killed with -9, waiting 1 s, 2 s, 4 s as the crashes repeat; logs -f follows across rotations',
    async () => {
      // A tiny rotation size: each manager's banner fills a file, so following must cross rotations.
      const env = { CODE_FACTORY_LOG_MAX_SIZE: '1k' };
      const started = await runLauncher(
        sandbox,
        ['start', '--detach', '--port', '0', '--workspace', sandbox.workspace],
        env,
      );
      expect(started.code).toBe(0);
      let current = state();

      let followed = '';
      const follower = spawn(process.execPath, [BIN, 'logs', '-f', '--lines', '0', '--workspace', sandbox.workspace], {
        env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      followers.push(follower);
      follower.stdout?.on('data', (chunk: Buffer) => (followed += chunk.toString()));
      await until('logs -f to print the log', async () =>
        followed.includes(`manager healthy (pid ${current.managerPid})`),
      );

      const healthyAfterCrash: number[] = [];
      for (let crash = 1; crash <= 3; crash++) {
        const killed = current.managerPid as number;
        process.kill(killed, 'SIGKILL');
        current = await runningManager(killed);
        healthyAfterCrash.push(Date.parse(current.managerStartedAt as string));
        expect(current.restarts).toBe(crash);
        await until(`logs -f to show manager ${current.managerPid}`, async () =>
          followed.includes(`manager healthy (pid ${current.managerPid})`),
        );
      }

      // The schedule: min(30 s, 1 s·2^(n−1)) for crashes in a row (each manager was up well under 30 s).
      const crashes = current.crashes;
      expect(crashes.map((c) => c.delayMs)).toEqual([1_000, 2_000, 4_000]);
      expect(crashes.map((c) => c.signal)).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL']);
      crashes.forEach((crash, i) => {
        // No manager came back before its delay was over; a loaded machine only adds to it.
        expect(healthyAfterCrash[i] - Date.parse(crash.at)).toBeGreaterThanOrEqual(crash.delayMs);
        if (i > 0) {
          expect(Date.parse(crash.at)).toBeGreaterThan(healthyAfterCrash[i - 1] - 1);
          // The uptime the backoff is decided on is the manager's time up, by the supervisor's clock: from
          // healthy to the crash. Where that uptime reaches 30 s the count starts over: nextCrashCount, whose
          // unit spec (cli/src/daemon/backoff.spec.ts) proves the threshold without waiting 30 s here.
          expect(crash.uptimeMs).toBeGreaterThanOrEqual(Date.parse(crash.at) - healthyAfterCrash[i - 1] - 1_000);
          expect(crash.uptimeMs).toBeLessThanOrEqual(Date.parse(crash.at) - healthyAfterCrash[i - 1] + 1_000);
        }
      });
      for (const seconds of [1, 2, 4]) {
        expect(followed).toContain(`restarting in ${seconds} s (crash ${Math.log2(seconds) + 1} in a row)`);
      }
      // The log did rotate (bounded: three old files at most), and -f printed every line all the same.
      const logs = fs.readdirSync(path.join(dataDirectory, 'logs')).filter((f) => f.startsWith('daemon.log'));
      expect(logs).toEqual(expect.arrayContaining(['daemon.log', 'daemon.log.1', 'daemon.log.2']));
      expect(logs.filter((f) => !['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3'].includes(f))).toEqual(
        [],
      );
      for (const file of logs) {
        expect(fs.statSync(path.join(dataDirectory, 'logs', file)).size).toBeLessThanOrEqual(2048);
      }
      expect(followed.match(/Agent Manager \d+\.\d+\.\d+\n/g)).toHaveLength(4);

      const status = await cli('status');
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/Restarts\s+3 \(last crash .*: SIGKILL\)/);
    },
    SLOW,
  );

  it(
    'stop waits for the graceful end, and says so when it outlasts --timeout',
    async () => {
      expect((await cli('start', '--detach', '--port', '0')).code).toBe(0);
      const daemon = state();
      const managerPid = daemon.managerPid as number;
      // A stopped (SIGSTOP) manager cannot end: its SIGTERM stays pending until it is continued.
      process.kill(managerPid, 'SIGSTOP');
      try {
        const stop = await cli('stop', '--timeout', '2');
        expect(stop.code).toBe(1);
        expect(stop.stderr).toBe(
          `agent-manager: Agent Manager is still stopping after 2 s (supervisor pid ${daemon.supervisorPid}, manager pid ${managerPid}); see \`agent-manager logs\`, or wait and run \`agent-manager status\`\n`,
        );
        expect(isRunning(managerPid)).toBe(true);
        expect(state().status).toBe('stopping');
      } finally {
        process.kill(managerPid, 'SIGCONT');
      }
      await until(
        'the manager and its supervisor to end',
        async () => !isRunning(managerPid) && !isRunning(daemon.supervisorPid),
      );
      expect(state()).toMatchObject({ reason: 'stopped on request', status: 'stopped' });
      expect(fs.existsSync(path.join(dataDirectory, 'manager.lock'))).toBe(false);
    },
    SLOW,
  );

  it(
    'does not restart a manager that failed to start, and says why (port in use, bad configuration)',
    async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as net.AddressInfo).port;
      try {
        const started = await cli('start', '--detach', '--port', String(port));
        expect(started.code).toBe(1);
        expect(started.stdout).toBe('');
        // Which process holds the port (this test's own), and what to do about it.
        expect(started.stderr).toMatch(
          new RegExp(
            `^agent-manager: Agent Manager did not start: the manager failed to start \\(exit code 1\\): cannot listen: 127\\.0\\.0\\.1:${port} is in use by pid ${process.pid} .*--port`,
          ),
        );
        const failed = state();
        expect(failed).toMatchObject({ managerPid: null, restarts: 0, status: 'failed' });
        expect(failed.crashes).toEqual([]);
        await until('the supervisor to exit', async () => !isRunning(failed.supervisorPid));
        // Still not restarted after it gave up, and status tells why.
        expect(state()).toMatchObject({ restarts: 0, status: 'failed' });
        const status = await cli('status');
        expect(status.code).toBe(3);
        expect(status.stdout).toContain('is not running');
        expect(status.stdout).toContain(`127.0.0.1:${port} is in use`);
      } finally {
        blocker.close();
      }

      const config = path.join(path.dirname(sandbox.workspace), 'broken.json');
      fs.writeFileSync(config, '{ not json');
      const broken = await cli('start', '--detach', '--port', '0', '--config', config);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(
        /^agent-manager: Agent Manager did not start: the manager failed to start \(exit code 1\): .*broken\.json/,
      );
      expect(state()).toMatchObject({ restarts: 0, status: 'failed' });
    },
    SLOW,
  );

  it(
    'two concurrent start --detach give one manager, and both print its URL',
    async () => {
      const [a, b] = await Promise.all([
        cli('start', '--detach', '--port', '0'),
        cli('start', '--detach', '--port', '0'),
      ]);
      expect([a.code, b.code]).toEqual([0, 0]);
      expect(urlOf(a.stdout)).toBe(urlOf(b.stdout));
      expect([a.stdout, b.stdout].filter((out) => out.includes('already running in the background'))).toHaveLength(1);
      const daemon = state();
      expect(daemon.managerPid).toBe(managerLockPid());
      expect(a.stdout).toContain(`PID         ${daemon.managerPid} (supervisor ${daemon.supervisorPid})`);
      expect(b.stdout).toContain(`PID         ${daemon.managerPid} (supervisor ${daemon.supervisorPid})`);
      // Only one supervisor ever spawned a manager; the other left after finding the first.
      const log = fs.readFileSync(path.join(dataDirectory, 'logs', 'daemon.log'), 'utf8');
      expect(log.match(/\[supervisor\] manager starting/g)).toHaveLength(1);
    },
    SLOW,
  );

  it(
    'a killed supervisor leaves its manager running: status finds it, start refuses, stop ends it',
    async () => {
      expect((await cli('start', '--detach', '--port', '0')).code).toBe(0);
      const daemon = state();
      process.kill(daemon.supervisorPid, 'SIGKILL');
      await until('the supervisor to die', async () => !isRunning(daemon.supervisorPid));
      expect(isRunning(daemon.managerPid as number)).toBe(true);

      const status = await cli('status');
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(
        `PID         ${daemon.managerPid} (its supervisor (pid ${daemon.supervisorPid}) is gone`,
      );
      expect(JSON.parse((await cli('status', '--json')).stdout)).toMatchObject({
        pid: daemon.managerPid,
        running: true,
        supervised: false,
        supervisorPid: null,
      });

      const again = await cli('start', '--detach', '--port', '0');
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(
        `already running for this workspace (pid ${daemon.managerPid}, ${daemon.url}) without a supervisor`,
      );

      const stopped = await cli('stop');
      expect(stopped.code).toBe(0);
      expect(stopped.stdout).toContain(`manager pid ${daemon.managerPid}`);
      expect(isRunning(daemon.managerPid as number)).toBe(false);
      const after = await cli('status');
      expect(after.code).toBe(3);
      expect(after.stdout).toContain(`its supervisor (pid ${daemon.supervisorPid}) was killed`);
    },
    SLOW,
  );

  describe('the database password is on no command line', () => {
    const PASSWORD = 'S3cret-pw-on-argv';
    /** The pids whose command line holds the password, of every process on the machine. */
    const exposing = (): number[] =>
      allPids().filter((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(PASSWORD);
        } catch {
          return false;
        }
      });
    const secretsFile = () => path.join(dataDirectory, 'daemon-secrets.json');
    const expectKeptPrivately = (url: string) => {
      // Not in daemon.json (whose arguments restart reuses), but in a file of its own, 0600.
      expect(fs.readFileSync(path.join(dataDirectory, 'daemon.json'), 'utf8')).not.toContain(PASSWORD);
      expect(fs.statSync(secretsFile()).mode & 0o777).toBe(0o600);
      expect(JSON.parse(fs.readFileSync(secretsFile(), 'utf8'))).toEqual({ env: { CODE_FACTORY_DATABASE_URL: url } });
      for (const file of fs.readdirSync(path.join(dataDirectory, 'logs'))) {
        expect({
          file,
          holdsPassword: fs.readFileSync(path.join(dataDirectory, 'logs', file), 'utf8').includes(PASSWORD),
        }).toEqual({ file, holdsPassword: false });
      }
    };

    it(
      'while the manager connects to a server that never answers: supervisor and manager get it in their environment',
      async () => {
        // A PostgreSQL server that accepts and never speaks: the manager waits on it (10 s), long enough to look.
        const silent = net.createServer(() => undefined);
        await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
        const url = `postgres://am:${PASSWORD}@127.0.0.1:${(silent.address() as net.AddressInfo).port}/postgres`;
        try {
          const starting = cli('start', '--detach', '--port', '0', '--db', url);
          const pids = await until('the supervisor to start its manager', async () => {
            try {
              const current = state();
              return current.managerPid !== null && isRunning(current.managerPid)
                ? { manager: current.managerPid, supervisor: current.supervisorPid }
                : undefined;
            } catch {
              return undefined;
            }
          });
          expect(exposing()).toEqual([]);
          for (const pid of [pids.supervisor, pids.manager]) {
            expect(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(PASSWORD);
          }
          // Where it is instead: the manager's environment, which only its owner can read.
          expect(environHas(pids.manager, `CODE_FACTORY_DATABASE_URL=${url}`)).toBe(true);
          expectKeptPrivately(url);
          const failed = await starting;
          expect(failed.code).toBe(1);
          expect(failed.stderr).toContain('Agent Manager did not start');
          expect(failed.stderr).not.toContain(PASSWORD);
          // Said once, on the terminal of the person who typed it.
          expect(failed.stderr).toMatch(/^agent-manager: warning: the password in --db is on the command line/);
        } finally {
          silent.close();
        }
      },
      SLOW,
    );

    (POSTGRES_AVAILABLE ? it : it.skip)(
      'with a real PostgreSQL: start --detach, restart, and a foreground start with --db; --db-file reads it from a 0600 file',
      async () => {
        const [clusterUrl, clusterDir] = execFileSync(
          process.execPath,
          [path.join(ROOT, 'scripts', 'postgres-cluster.js'), 'start'],
          { encoding: 'utf8' },
        )
          .trim()
          .split(' ');
        try {
          // The cluster trusts loopback, so any password logs in: the point is where it is seen.
          const url = clusterUrl.replace('postgres://am@', `postgres://am:${PASSWORD}@`);
          const started = await cli('start', '--detach', '--port', '0', '--db', url);
          expect(started.code).toBe(0);
          const first = state();
          expect(first.managerArgs).toEqual(['--port', '0']);
          expect(exposing()).toEqual([]);
          expectKeptPrivately(url);
          // The manager runs on PostgreSQL: its banner (in the log) says so, without the password.
          expect((await cli('logs')).stdout).toContain(`Database    ${clusterUrl}`);

          const restarted = await cli('restart');
          expect(restarted.code).toBe(0);
          const second = state();
          expect(second.managerPid).not.toBe(first.managerPid);
          expect(second.managerArgs).toEqual(['--port', '0']);
          expect(environHas(second.managerPid as number, `CODE_FACTORY_DATABASE_URL=${url}`)).toBe(true);
          expect(exposing()).toEqual([]);
          expectKeptPrivately(url);
          expect((await cli('stop')).code).toBe(0);

          // The person's own foreground command: its command line is rewritten without the password.
          const foreground = await startManager({ args: ['--db', url], sandbox });
          try {
            expect(foreground.stdout()).toContain(`Database    ${clusterUrl}`);
            expect(foreground.stderr()).toMatch(/^agent-manager: warning: the password in --db is on the command line/);
            const cmdline = fs.readFileSync(`/proc/${foreground.child.pid}/cmdline`, 'utf8');
            expect(cmdline).toContain(`--db ${clusterUrl}`);
            expect(exposing()).toEqual([]);
          } finally {
            await foreground.stop();
          }

          // --db-file: refused while others can read it, then the URL stays in the file.
          const file = path.join(path.dirname(sandbox.home), 'db-url');
          fs.writeFileSync(file, `${url}\n`, { mode: 0o644 });
          fs.chmodSync(file, 0o644);
          const loose = await cli('start', '--detach', '--port', '0', '--db-file', file);
          expect(loose.code).toBe(1);
          expect(loose.stderr).toBe(
            `agent-manager: --db-file ${file} can be read by other users (mode 0644): \`chmod 600 ${file}\` first\n`,
          );
          fs.chmodSync(file, 0o600);
          const fromFile = await cli('start', '--detach', '--port', '0', '--db-file', file);
          expect(fromFile.stderr).toBe('');
          expect(fromFile.code).toBe(0);
          expect(state().managerArgs).toEqual(['--port', '0', '--db-file', file]);
          expect(fs.existsSync(secretsFile())).toBe(false);
          expect(exposing()).toEqual([]);
          expect((await cli('logs', '--lines', '20')).stdout).toContain(`Database    ${clusterUrl}`);
          expect((await cli('stop')).code).toBe(0);
        } finally {
          execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'postgres-cluster.js'), 'stop', clusterDir]);
        }
      },
      SLOW,
    );
  });

  it('refuses --detach with --stop-with-parent, and a workspace that does not exist', async () => {
    const both = await cli('start', '--detach', '--stop-with-parent');
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/^agent-manager: --stop-with-parent and --detach contradict/);
    const missing = await runLauncher(sandbox, ['status', '--workspace', path.join(sandbox.workspace, 'nope')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^agent-manager: workspace .* does not exist/);
    expect(fs.existsSync(path.join(dataDirectory, 'daemon.json'))).toBe(false);
  });
});
