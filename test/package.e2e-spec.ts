// The npm package as a user gets it: `npm pack`, installed into an empty prefix with a clean HOME,
// then `agent-manager` inside a fresh git repository. Needs the build (`npm test` builds first).
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { workspaceKey } from '@server/core/workspace/workspace';

import { ROOT } from './support/manager-process';

const MINUTES = 60_000;

interface PackedFile {
  path: string;
}

describe('the npm package', () => {
  let base: string;
  let tarball: string;
  let files: string[];
  let prefix: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };

  beforeAll(() => {
    if (
      !fs.existsSync(path.join(ROOT, 'dist/cli/src/agent-manager.js')) ||
      !fs.existsSync(path.join(ROOT, 'dist/dashboard/browser/index.html'))
    ) {
      throw new Error('build first (npm run build): the package carries the built server, CLIs and dashboard');
    }
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-package-'));
    // `prepack` would build again; the build is there already.
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', base], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const packed = (JSON.parse(out) as Array<{ filename: string; files: PackedFile[] }>)[0];
    tarball = path.join(base, packed.filename);
    files = packed.files.map((f) => f.path);

    prefix = path.join(base, 'prefix');
    home = path.join(base, 'home');
    fs.mkdirSync(home);
    // Nothing of this machine's setup: an empty HOME, only the system's programs and this Node.
    env = {
      HOME: home,
      LANG: 'C.UTF-8',
      PATH: [path.join(prefix, 'bin'), path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
      // How this machine reaches the registry (its CA bundle, a proxy) is the machine's, not the
      // project's setup: without it npm's fetch of a package's metadata fails the TLS handshake and
      // retries for many minutes.
      ...Object.fromEntries(
        [
          'NODE_EXTRA_CA_CERTS',
          'SSL_CERT_FILE',
          'SSL_CERT_DIR',
          'HTTPS_PROXY',
          'https_proxy',
          'HTTP_PROXY',
          'http_proxy',
          'NO_PROXY',
          'no_proxy',
        ]
          .filter((name) => process.env[name] !== undefined)
          .map((name) => [name, process.env[name] as string]),
      ),
    };
    // The npm cache `npm ci` filled (passed explicitly: HOME is empty) keeps the install fast and
    // offline where it can be. Install scripts are off: the one that matters, sqlite3's, compiles
    // its native binding from source on a machine that cannot download the prebuilt one (7 min on
    // 2 cores); the binding of the very same sqlite3 version the project compiled is copied in.
    const cache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
    const install = spawnSync(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--cache',
        cache,
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel',
        'error',
        tarball,
      ],
      // Bounded: a registry that does not answer fails the suite in minutes, not the whole CI run.
      {
        encoding: 'utf8',
        env: { ...env, npm_config_update_notifier: 'false' },
        killSignal: 'SIGKILL',
        timeout: 4 * MINUTES,
      },
    );
    if (install.status !== 0) {
      throw new Error(`npm install failed: ${install.stderr}`);
    }
    const installedSqlite = path.join(prefix, 'lib/node_modules', pkg.name, 'node_modules/sqlite3');
    const ownSqlite = path.join(ROOT, 'node_modules/sqlite3');
    const version = (dir: string) =>
      (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    expect(version(installedSqlite)).toBe(version(ownSqlite));
    fs.mkdirSync(path.join(installedSqlite, 'build/Release'), { recursive: true });
    fs.copyFileSync(
      path.join(ownSqlite, 'build/Release/node_sqlite3.node'),
      path.join(installedSqlite, 'build/Release/node_sqlite3.node'),
    );
  }, 5 * MINUTES);

  afterAll(() => {
    if (base) {
      fs.rmSync(base, { force: true, recursive: true });
    }
  });

  it('is named for npm, and carries the built server, both CLIs and the dashboard, no sources or tests', () => {
    expect(pkg.name).toBe('code-factory-agent-manager');
    expect(path.basename(tarball)).toBe(`${pkg.name}-${pkg.version}.tgz`);
    for (const file of [
      'bin/agent-manager.js',
      'bin/code-factory-cli.js',
      'dist/cli/src/agent-manager.js',
      'dist/cli/src/code-factory-cli.js',
      'dist/server/src/manager.js',
      'dist/dashboard/browser/index.html',
      'README.md',
    ]) {
      expect(files).toContain(file);
    }
    expect(
      files.filter(
        (f) =>
          /(^|\/)(test|bench|dashboard\/src|server\/src|cli\/src|libs\/[^/]+\/src)\//.test(f) && !f.startsWith('dist/'),
      ),
    ).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((f) => /\.spec\.|e2e-spec|int-spec/.test(f))).toEqual([]);
  });

  it('depends on runtime packages only: the Angular toolchain, test tools and the dashboard libraries (bundled) are dev', () => {
    const runtime = Object.keys(pkg.dependencies);
    for (const dev of [
      '@angular/core',
      '@angular/build',
      'jest',
      'playwright-core',
      'typescript',
      'marked',
      'dompurify',
      'diff2html',
    ]) {
      expect(runtime).not.toContain(dev);
      expect(Object.keys(pkg.devDependencies)).toContain(dev);
    }
    // Every package the built server and CLIs load is a runtime dependency (or Node's own): the
    // dashboard's libraries are bundled into it, never required at run time.
    const builtins = new Set(require('node:module').builtinModules as string[]);
    const required = new Set<string>();
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          walk(full);
        } else if (entry.name.endsWith('.js')) {
          for (const match of fs.readFileSync(full, 'utf8').matchAll(/require\("([^".][^"]*)"\)/g)) {
            const name = match[1].startsWith('@') ? match[1].split('/').slice(0, 2).join('/') : match[1].split('/')[0];
            if (!name.startsWith('node:') && !builtins.has(name)) {
              required.add(name);
            }
          }
        }
      }
    };
    for (const dir of ['dist/server', 'dist/cli', 'dist/libs']) {
      walk(path.join(ROOT, dir));
    }
    expect([...required].filter((name) => !runtime.includes(name))).toEqual([]);
    expect(required.has('@nestjs/core')).toBe(true);
  });

  it('answers --version and --help without a manager or a workspace', () => {
    const bin = path.join(prefix, 'bin', 'agent-manager');
    const version = spawnSync(bin, ['--version'], { cwd: base, encoding: 'utf8', env });
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);
    const help = spawnSync(bin, ['--help'], { cwd: base, encoding: 'utf8', env });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: agent-manager');
    for (const command of ['start', 'doctor', 'token', 'status', 'stop', 'restart', 'logs']) {
      expect(help.stdout).toContain(command);
    }
    const factory = spawnSync(path.join(prefix, 'bin', 'code-factory-cli'), ['--help'], {
      cwd: base,
      encoding: 'utf8',
      env,
    });
    expect(factory.status).toBe(0);
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it('`agent-manager` inside a fresh git repository binds it, serves the health check and the dashboard, and stops on SIGTERM', async () => {
    const repo = path.join(base, 'repo');
    fs.mkdirSync(repo);
    execFileSync('git', ['init', '-q'], { cwd: repo });
    let out = '';
    let err = '';
    const child: ChildProcess = spawn(path.join(prefix, 'bin', 'agent-manager'), ['--port', '0'], {
      cwd: repo,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const origin = await new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = /API\s+(http:\/\/[^\s]+)\/api/.exec(out);
        if (match?.[1]) {
          resolve(match[1]);
        }
      };
      child.stdout?.on('data', check);
      void exited.then((code) =>
        reject(new Error(`agent-manager exited with ${code}\nstdout: ${out}\nstderr: ${err}`)),
      );
    });
    try {
      const root = fs.realpathSync(repo);
      expect(out).toContain(`Agent Manager ${pkg.version}`);
      expect(out).toContain(`Workspace   ${root}`);
      const dataDirectory = path.join(home, '.code-factory', 'workspaces', workspaceKey(root));
      const token = fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim();
      const health = await fetch(`${origin}/api/health`, { headers: { authorization: `Bearer ${token}` } });
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ version: pkg.version });
      const dashboard = await fetch(`${origin}/`);
      expect(dashboard.status).toBe(200);
      const html = await dashboard.text();
      expect(html).toContain('<am-root>');
      const script = /src="\/([^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      expect((await fetch(`${origin}/${script}`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(err).toBe('');
  }, 60_000);

  it(
    'runs in the background from the package: start --detach, status, logs, stop',
    () => {
      const repo = path.join(base, 'daemon-repo');
      fs.mkdirSync(repo);
      execFileSync('git', ['init', '-q'], { cwd: repo });
      const bin = path.join(prefix, 'bin', 'agent-manager');
      const run = (...args: string[]) => spawnSync(bin, args, { cwd: repo, encoding: 'utf8', env, timeout: 120_000 });
      const started = run('start', '--detach', '--port', '0');
      try {
        expect(started.stderr).toBe('');
        expect(started.status).toBe(0);
        const url = /URL\s+(http:\/\/\S+)/.exec(started.stdout)?.[1];
        expect(url).toBeDefined();
        const status = run('status', '--json');
        expect(status.status).toBe(0);
        expect(JSON.parse(status.stdout)).toMatchObject({
          activeRuns: 0,
          running: true,
          supervised: true,
          url,
          version: pkg.version,
        });
        expect(run('logs').stdout).toContain(`[supervisor] manager healthy`);
      } finally {
        const stopped = run('stop');
        expect(stopped.status).toBe(0);
      }
      expect(run('status').status).toBe(3);
    },
    3 * MINUTES,
  );

  it('runs doctor from the package, as JSON', () => {
    const doctor = spawnSync(path.join(prefix, 'bin', 'agent-manager'), ['doctor', '--json', '--port', '0'], {
      cwd: base,
      encoding: 'utf8',
      env,
    });
    const report = JSON.parse(doctor.stdout) as { ok: boolean; checks: Array<{ id: string; status: string }> };
    expect(report.checks.map((c) => c.id)).toEqual([
      'node',
      'git',
      'codex',
      'claude',
      'github',
      'isolation',
      'network',
      'environment',
      'worktrees',
      'port',
      'dataDirectory',
      'database',
    ]);
    // No agent CLI on this clean PATH: that is the required miss.
    expect(report.ok).toBe(false);
    expect(doctor.status).toBe(1);
    expect(report.checks.find((c) => c.id === 'codex')?.status).toBe('fail');
  }, 60_000);
});
