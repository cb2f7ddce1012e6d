import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { workspaceKey } from '@server/core/workspace/workspace';
import { NODE_ENGINES } from '@server/doctor/runtime-checks';

import { query, snapshotStore } from './support/db-snapshot';
import { initRepository } from './support/git-repo';
import { apiClient, ok } from './support/api';
import { ROOT, Sandbox, makeSandbox, runLauncher, startManager } from './support/manager-process';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

describe('agent-manager start', () => {
  let sandbox: Sandbox;

  beforeEach(() => {
    sandbox = makeSandbox();
  });
  afterEach(() => sandbox.cleanup());

  it('binds the realpath of the workspace, lays out the data directory and prints only the banner', async () => {
    const link = path.join(path.dirname(sandbox.workspace), 'link-to-repo');
    fs.symlinkSync(sandbox.workspace, link);
    const manager = await startManager({ sandbox: { ...sandbox, workspace: link } });
    try {
      const root = fs.realpathSync(sandbox.workspace);
      const dataDirectory = path.join(sandbox.home, 'workspaces', workspaceKey(root));
      expect(workspaceKey(root)).toMatch(/^[0-9a-f]{16}$/);
      expect(manager.dataDirectory()).toBe(dataDirectory);
      for (const entry of ['config.json', 'factory.sqlite', 'attachments', 'logs']) {
        expect(fs.existsSync(path.join(dataDirectory, entry))).toBe(true);
      }
      const lines = manager.stdout().trim().split('\n');
      expect(lines[0]).toMatch(/^Agent Manager \d+\.\d+\.\d+/);
      expect(manager.stdout()).toContain(`Workspace   ${root}`);
      expect(manager.stdout()).toContain(`Config file ${path.join(dataDirectory, 'config.json')}`);
      expect(manager.stdout()).toContain(`Database    ${path.join(dataDirectory, 'factory.sqlite')}`);
      expect(manager.stdout()).toMatch(/Log file\s+.*agent-manager\.log/);
      expect(manager.stdout()).toContain(`Dashboard   ${manager.origin}/`);
      expect(manager.stderr()).toBe('');
      const config = JSON.parse(fs.readFileSync(path.join(dataDirectory, 'config.json'), 'utf8'));
      expect(config).toMatchObject({ host: '127.0.0.1', port: 4310, pullRequestReconcileIntervalSeconds: 60 });
    } finally {
      expect(await manager.stop()).toBe(0);
    }
    expect(fs.existsSync(path.join(manager.dataDirectory(), 'manager.lock'))).toBe(false);
  });

  it('warns in the banner and the log when agents will work in place: no git repository, or one without a commit', async () => {
    const root = fs.realpathSync(sandbox.workspace);
    const logText = (manager: { dataDirectory(): string }) => {
      const logs = path.join(manager.dataDirectory(), 'logs');
      return fs
        .readdirSync(logs)
        .filter((f) => f.endsWith('.log'))
        .map((f) => fs.readFileSync(path.join(logs, f), 'utf8'))
        .join('');
    };

    // A plain folder: the agents work in it directly.
    const plain = await startManager({ sandbox });
    try {
      expect(plain.stdout()).toContain(
        `WARNING: ${root} is not a git repository: agents will work in place, directly in this folder`,
      );
      expect(plain.stdout()).toContain('git init && git add -A && git commit -m "Initial commit"');
      const created = await plain.api.POST('/api/requirements', { body: { provider: 'codex', title: 'plain' } });
      expect(created.data).toMatchObject({ isolation: 'in_place', warnings: [] });
    } finally {
      await plain.stop();
    }
    expect(logText(plain)).toMatch(/"level":"warn".*is not a git repository: agents will work in place/);

    // `git init` only: it looks like a repository, but the agents would work in the checkout.
    execFileSync('git', ['init', '-q'], { cwd: sandbox.workspace });
    const noCommit = await startManager({ sandbox });
    try {
      expect(noCommit.stdout()).toContain(
        `WARNING: ${root} is a git repository without any commit: agents will work in place, directly in your checkout`,
      );
      expect(noCommit.stdout()).toContain('make a first commit: git add -A && git commit -m "Initial commit"');
      const created = await noCommit.api.POST('/api/requirements', { body: { provider: 'codex', title: 'no commit' } });
      expect(created.status).toBe(201);
      expect(created.data).toMatchObject({ isolation: 'in_place', warnings: ['no_commit_in_place'] });
    } finally {
      await noCommit.stop();
    }

    // With a commit: no warning, and Requirements get worktrees.
    initRepository(sandbox.workspace);
    const ready = await startManager({ sandbox });
    try {
      expect(ready.stdout()).not.toContain('agents will work in place');
      const created = await ready.api.POST('/api/requirements', { body: { provider: 'codex', title: 'ready' } });
      expect(created.data).toMatchObject({ isolation: 'worktree', warnings: [] });
    } finally {
      await ready.stop();
    }
  });

  it('writes structured JSON log lines, never message bodies', async () => {
    const manager = await startManager({ sandbox, args: ['--log-level', 'debug'] });
    const created = await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'log me' } });
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: created.data!.id } },
      body: { message: 'SECRET-BODY-TEXT' },
    });
    await manager.stop();
    const logs = path.join(manager.dataDirectory(), 'logs');
    const files = fs.readdirSync(logs).filter((f) => f.endsWith('.log'));
    const text = files.map((f) => fs.readFileSync(path.join(logs, f), 'utf8')).join('');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(
      lines.some(
        (l) => l.message === 'message delivered' && l.requirementId === created.data!.id && l.actor === 'human',
      ),
    ).toBe(true);
    expect(lines.every((l) => typeof l.timestamp === 'string' && typeof l.level === 'string')).toBe(true);
    expect(text).not.toContain('SECRET-BODY-TEXT');
  });

  it('keeps everything across a restart and continues event ids', async () => {
    const first = await startManager({ sandbox });
    const created = await first.api.POST('/api/requirements', { body: { provider: 'codex', title: 'durable' } });
    await first.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: created.data!.id } },
      body: { message: 'remember me' },
    });
    expect(await first.stop()).toBe(0);
    // Read once the manager is gone: its stop wrote too (the run it cut short says so).
    const before = await snapshotStore(first.dataDirectory());

    const second = await startManager({ sandbox });
    try {
      const fetched = await second.api.GET('/api/requirements/{id}', { params: { path: { id: created.data!.id } } });
      expect(fetched.data).toMatchObject({ id: created.data!.id, session: { pendingMessageCount: 1 } });
      const messages = await second.api.GET('/api/requirements/{id}/messages', {
        params: { path: { id: created.data!.id } },
      });
      expect(messages.data!.items.map((m: { body: string; code: string | null }) => m.code ?? m.body)).toEqual([
        'remember me',
        'run.manager_stopped',
      ]);
      const live = await connectSse(`${second.origin}/api/events?after=${before.maxEventId - 1}`);
      await live.waitFor(1);
      await second.api.POST('/api/requirements/{id}/reply', {
        params: { path: { id: created.data!.id } },
        body: { message: 'after restart' },
      });
      await live.waitFor(2);
      expect(live.events.map((e) => e.id).slice(0, 2)).toEqual([before.maxEventId, before.maxEventId + 1]);
      live.close();
    } finally {
      await second.stop();
    }
  });

  it('refuses a second instance on the same workspace, naming the first one', async () => {
    const first = await startManager({ sandbox });
    try {
      const second = await runLauncher(sandbox, ['start', '--workspace', sandbox.workspace, '--port', '0']);
      expect(second.code).not.toBe(0);
      expect(second.stderr).toContain(`pid ${first.child.pid}`);
      expect(second.stderr).toContain(first.origin);
      expect(second.stderr.trim().split('\n')).toHaveLength(1);
      expect((await first.api.GET('/api/health')).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  it('says which process holds a port in use, and how to pick another', async () => {
    const blocker = spawn(
      process.execPath,
      ['-e', "require('net').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })"],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    try {
      const port = await new Promise<number>((resolve) =>
        blocker.stdout.once('data', (c: Buffer) => resolve(Number(c.toString().trim()))),
      );
      const result = await runLauncher(sandbox, ['start', '--workspace', sandbox.workspace, '--port', String(port)]);
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(`127.0.0.1:${port} is in use by pid ${blocker.pid} (${process.execPath} -e`);
      expect(result.stderr).toContain('--port <another>');
      expect(result.stderr).not.toContain('listen EADDRINUSE');
    } finally {
      blocker.kill();
    }
  });

  it('says when the port is held by another Agent Manager, with its workspace and dashboard', async () => {
    const first = await startManager({ sandbox });
    try {
      const port = new URL(first.origin).port;
      const other = path.join(path.dirname(sandbox.workspace), 'other-repo');
      fs.mkdirSync(other);
      const second = await runLauncher(sandbox, ['start', '--workspace', other, '--port', port]);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        `is in use by another Agent Manager (pid ${first.child.pid}, workspace ${fs.realpathSync(sandbox.workspace)}); its dashboard is ${first.origin}/`,
      );
      expect(second.stderr).toContain('--port <another>');
      // doctor says the same about the port.
      const doctor = await runLauncher(sandbox, ['doctor', '--json', '--workspace', other, '--port', port]);
      const check = (JSON.parse(doctor.stdout) as { checks: Array<{ id: string; detail: string }> }).checks.find(
        (c) => c.id === 'port',
      );
      expect(check?.detail).toContain(`another Agent Manager (pid ${first.child.pid}`);
    } finally {
      await first.stop();
    }
  });

  it('takes over the stale lock of a killed instance and loses nothing it committed', async () => {
    const first = await startManager({ sandbox });
    const created = await first.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'crash' } });
    await first.kill9();
    expect(fs.existsSync(path.join(first.dataDirectory(), 'manager.lock'))).toBe(true);
    const second = await startManager({ sandbox });
    try {
      expect(
        (await second.api.GET('/api/requirements/{id}', { params: { path: { id: created.data!.id } } })).status,
      ).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it('stops cleanly on SIGTERM and SIGINT, ending SSE streams and finishing accepted writes', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const manager = await startManager({ sandbox });
      const created = await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: signal } });
      const stream = await connectSse(`${manager.origin}/api/events`);
      let answered = 0;
      const writes = Array.from({ length: 30 }, (_, i) =>
        manager.api
          .POST('/api/requirements/{id}/reply', {
            params: { path: { id: created.data!.id } },
            body: { message: `m${i}` },
          })
          .then(
            (r) => {
              answered += r.status === 202 ? 1 : 0;
              return r;
            },
            () => null,
          ),
      );
      // The stop arrives while writes are being accepted: at least one already was.
      await until('a first accepted reply', async () => answered > 0);
      const exited = new Promise<number | null>((resolve) => manager.child.once('exit', resolve));
      manager.child.kill(signal);
      expect(await exited).toBe(0);
      await stream.ended;
      const accepted = (await Promise.all(writes)).filter((r) => r?.status === 202).length;
      expect(accepted).toBeGreaterThan(0);
      const rows = await query<{ n: number }>(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        'SELECT COUNT(*) AS n FROM requirement_message WHERE requirement_id = ?',
        [created.data!.id],
      );
      // Every reply that was answered 202 is on disk (more may have committed unanswered).
      expect(rows[0].n).toBeGreaterThanOrEqual(accepted);
      expect(fs.existsSync(path.join(manager.dataDirectory(), 'manager.lock'))).toBe(false);
    }
  });

  it('applies flags over CODE_FACTORY_* variables over the file, without writing them back', async () => {
    const db = path.join(path.dirname(sandbox.workspace), 'elsewhere.sqlite');
    const manager = await startManager({
      args: ['--db', db, '--pr-reconcile-interval', '5'],
      env: { CODE_FACTORY_LOG_LEVEL: 'warn', CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '9' },
      sandbox,
    });
    try {
      const config = await ok(manager.api.GET('/api/configuration'));
      expect(config.effective).toMatchObject({
        databasePath: db,
        logLevel: 'warn',
        pullRequestReconcileIntervalSeconds: 5,
      });
      expect(config.values).toMatchObject({
        databasePath: null,
        logLevel: 'info',
        pullRequestReconcileIntervalSeconds: 60,
      });
      expect(config.overriddenFields).toEqual(
        expect.arrayContaining(['databasePath', 'logLevel', 'port', 'pullRequestReconcileIntervalSeconds']),
      );
      expect(config.overriddenFields).not.toContain('host');
      expect(fs.existsSync(db)).toBe(true);
      expect((await ok(manager.api.GET('/api/workspace'))).databasePath).toBe(db);
      const file = JSON.parse(fs.readFileSync(config.path, 'utf8'));
      expect(file).toMatchObject({ databasePath: null, logLevel: 'info', port: 4310 });
    } finally {
      await manager.stop();
    }
  });

  it.each([
    [['--port', 'abc'], '--port must be a whole number'],
    [['--port', '70000'], '--port must be a whole number'],
    [['--log-level', 'loud'], '--log-level must be one of'],
    [['--allow-origin', 'not a url'], 'invalid launch option'],
    [['--workspace', '/definitely/not/here'], 'does not exist'],
  ])('refuses bad options %j with one clear line', async (args, message) => {
    const result = await runLauncher(sandbox, ['start', '--port', '0', '--workspace', sandbox.workspace, ...args]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stdout).toBe('');
  });

  it('refuses an invalid configuration file with a message naming it', async () => {
    const config = path.join(sandbox.home, 'custom.json');
    fs.mkdirSync(sandbox.home, { recursive: true });
    fs.writeFileSync(config, JSON.stringify({ port: 'high', surprise: true }));
    const result = await runLauncher(sandbox, ['start', '--workspace', sandbox.workspace, '--config', config]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(config);
    expect(result.stderr).toContain('surprise');
  });

  it('`npm start` rebuilds what is outdated and prints one banner: no build warnings, nothing else', async () => {
    initRepository(sandbox.workspace);
    // The dashboard older than its sources: npm start builds it again, as after a pull.
    const index = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
    fs.utimesSync(index, 0, 0);
    const child = spawn('npm', ['start', '--silent', '--', '--workspace', sandbox.workspace, '--port', '0'], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner: ${out}\n${err}`)), 540_000);
        child.stdout.on('data', () => {
          if (/Press Ctrl\+C to stop\./.test(out)) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}\n${err}`)));
      });
      expect(fs.statSync(index).mtimeMs).toBeGreaterThan(0);
      // One line saying why it waits, and the banner: no bundler warning, no npm notice.
      expect(err).toBe('Building (build:dashboard)…\n');
      expect(out.match(/^Agent Manager \d/gm)).toHaveLength(1);
      expect(out).not.toMatch(/WARNING|warn/i);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  }, 600_000);

  it('`npm start` on a fresh clone installs, builds and starts by itself', async () => {
    initRepository(sandbox.workspace);
    const base = path.dirname(sandbox.workspace);
    const clone = path.join(base, 'clone');
    execFileSync('git', ['clone', '-q', ROOT, clone]);
    expect(fs.existsSync(path.join(clone, 'node_modules'))).toBe(false);
    expect(fs.existsSync(path.join(clone, 'dist'))).toBe(false);
    // An `npm` that stands in for `npm ci` alone (it links this checkout's installed tree instead of
    // downloading it again, and records the call); everything else is the real npm.
    const bin = path.join(base, 'bin');
    fs.mkdirSync(bin);
    const realNpm = execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim();
    const calls = path.join(base, 'npm-ci-calls');
    fs.writeFileSync(
      path.join(bin, 'npm'),
      `#!/bin/sh\nif [ "$1" = ci ]; then echo "$*" >> '${calls}'; ln -s '${fs.realpathSync(path.join(ROOT, 'node_modules'))}' node_modules; exit 0; fi\nexec '${realNpm}' "$@"\n`,
      { mode: 0o755 },
    );
    const child = spawn('npm', ['start', '--silent', '--', '--workspace', sandbox.workspace, '--port', '0'], {
      cwd: clone,
      detached: true,
      env: { ...process.env, CODE_FACTORY_HOME: sandbox.home, PATH: `${bin}:${process.env.PATH ?? ''}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    try {
      const origin = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner: ${out}\n${err}`)), 540_000);
        child.stdout.on('data', () => {
          const match = /API\s+(http:\/\/\S+)\/api/.exec(out);
          if (match?.[1]) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}\n${err}`)));
      });
      expect(fs.readFileSync(calls, 'utf8')).toBe('ci --no-audit --no-fund\n');
      expect(err).toBe('Installing dependencies (npm ci)…\nBuilding (build:server)…\nBuilding (build:dashboard)…\n');
      expect(out.match(/^Agent Manager \d/gm)).toHaveLength(1);
      expect((await ok(apiClient(origin).GET('/api/health'))).workspaceRoot).toBe(fs.realpathSync(sandbox.workspace));
      expect(await (await fetch(`${origin}/`)).text()).toContain('<am-root');
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  }, 600_000);

  it('starts through `npm start -- --workspace DIR --port P` and binds the given workspace', async () => {
    const child = spawn('npm', ['start', '--silent', '--', '--workspace', sandbox.workspace, '--port', '0'], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    try {
      const origin = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner: ${out}`)), 120_000);
        child.stdout.on('data', () => {
          const match = /API\s+(http:\/\/\S+)\/api/.exec(out);
          if (match?.[1]) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
      });
      const health = await apiClient(origin).GET('/api/health');
      expect(health.data!.workspaceRoot).toBe(fs.realpathSync(sandbox.workspace));
      const dashboard = await fetch(`${origin}/some/deep/link`);
      expect(dashboard.status).toBe(200);
      expect(await dashboard.text()).toContain('<am-root');
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  });
});

describe('the README', () => {
  it('leads with what works today, a clone and `npm start`, then the tarball; the registry is marked as not published yet', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks[0]).toMatch(/^git clone .+\ncd agent-manager\nnpm start -- --workspace \/path\/to\/your\/repo/);
    // The tarball `npm pack` writes, installed by its exact name.
    expect(blocks[1]).toContain(`npm pack `);
    expect(blocks[1]).toContain(`npm i -g ./${pkg.name}-${pkg.version}.tgz`);
    // The registry command appears only in prose saying it is not published yet.
    const paragraphs = readme.split(/\n\n+/).filter((p) => p.includes(`npm i -g ${pkg.name}`));
    expect(paragraphs.length).toBeGreaterThan(0);
    for (const paragraph of paragraphs) {
      expect(paragraph).toMatch(/not yet|not on the npm registry/);
      expect(paragraph.startsWith('```')).toBe(false);
    }
  });
});

describe('the declared Node.js engines', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };

  it('are what doctor checks and the README says', () => {
    expect(pkg.engines.node).toBe(NODE_ENGINES);
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain(`Node.js \`${NODE_ENGINES}\``);
  });

  it('hold for every locked package, so `npm ci` installs on the declared minimum and on this Node without EBADENGINE', () => {
    // Read from the lock `npm ci` installs: a package whose engines exclude the declared minimum
    // (content-type 3, through Octokit, wants Node 22) makes the declaration untrue.
    const semver = require('semver') as { satisfies(version: string, range: string): boolean };
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; engines?: unknown }>;
    };
    const excluded = Object.entries(lock.packages).flatMap(([where, entry]) => {
      const range =
        entry.engines && typeof entry.engines === 'object' && !Array.isArray(entry.engines)
          ? (entry.engines as { node?: string }).node
          : undefined;
      return range === undefined ||
        (['20.19.1', '22.13.0', '24.0.0'].every((v) => semver.satisfies(v, range)) &&
          semver.satisfies(process.version, range))
        ? []
        : [`${where}@${entry.version}: node ${range}`];
    });
    expect(excluded).toEqual([]);

    // And npm itself agrees, refusing (engine-strict) what it would otherwise warn about.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-engines-'));
    try {
      fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
      fs.copyFileSync(path.join(ROOT, 'package-lock.json'), path.join(dir, 'package-lock.json'));
      const npm = spawnSync(
        'npm',
        [
          'install',
          '--package-lock-only',
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          '--engine-strict',
        ],
        {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, npm_config_update_notifier: 'false' },
          timeout: 120_000,
        },
      );
      expect(`${npm.stdout}${npm.stderr}`).not.toContain('EBADENGINE');
      expect(npm.status).toBe(0);
      // The lock was already complete: nothing to change.
      expect(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8')).toBe(
        fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'),
      );
    } finally {
      fs.rmSync(dir, { force: true, recursive: true });
    }
  }, 180_000);
});
