// `agent-manager doctor` with each check failing in turn: a PATH of chosen programs only, the real
// Codex and Claude Code CLIs logged out and logged in (a temporary HOME holding the auth files they
// read), the fake GitHub answering GET /user with a token's scopes.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { apiClient } from './support/api';
import { FakeGitHubServer } from './support/fake-github-server';
import { initRepository } from './support/git-repo';
import { sendUntyped } from './support/http';
import { ROOT, makeSandbox, startManager } from './support/manager-process';

const BIN = path.join(ROOT, 'bin', 'agent-manager.js');
const CLIS = path.join(ROOT, 'test', 'agent-clis', 'node_modules', '.bin');

interface Check {
  id: string;
  status: 'ok' | 'warn' | 'fail';
  required: boolean;
  detail: string;
  fix: string | null;
}

interface Result {
  code: number | null;
  stdout: string;
  report: { ok: boolean; checks: Check[] } | null;
  check(id: string): Check;
}

function which(program: string): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = path.join(dir, program);
    if (dir && fs.existsSync(candidate)) {
      return fs.realpathSync(candidate);
    }
  }
  throw new Error(`${program} is not installed`);
}

describe('agent-manager doctor', () => {
  let base: string;
  let github: FakeGitHubServer;

  /** A directory holding exactly `programs` (links to the real ones), to be the whole PATH. */
  function pathOf(programs: Record<string, string>): string {
    const dir = fs.mkdtempSync(path.join(base, 'bin-'));
    for (const [name, target] of Object.entries(programs)) {
      fs.symlinkSync(target, path.join(dir, name));
    }
    return dir;
  }

  let fullPath: string;
  let home: string;
  let repo: string;

  function doctor(options: { args?: string[]; env?: NodeJS.ProcessEnv; json?: boolean } = {}): Promise<Result> {
    const json = options.json ?? true;
    return new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        [BIN, 'doctor', '--port', '0', ...(json ? ['--json'] : []), ...(options.args ?? [])],
        {
          cwd: repo,
          env: {
            CODE_FACTORY_GITHUB_API_URL: github.url,
            CODE_FACTORY_HOME: path.join(home, '.code-factory'),
            GITHUB_TOKEN: 'good-token',
            HOME: home,
            PATH: fullPath,
            ...options.env,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.on('exit', (code) => {
        const report = json ? (JSON.parse(stdout) as Result['report']) : null;
        resolve({
          check: (id) => {
            const found = report?.checks.find((c) => c.id === id);
            if (!found) {
              throw new Error(`no ${id} check in ${stdout}`);
            }
            return found;
          },
          code,
          report,
          stdout,
        });
      });
    });
  }

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-doctor-'));
    github = await FakeGitHubServer.start({ scopes: 'repo, read:org', token: 'good-token' });
    fullPath = pathOf({
      bwrap: which('bwrap'),
      claude: fs.realpathSync(path.join(CLIS, 'claude')),
      codex: fs.realpathSync(path.join(CLIS, 'codex')),
      git: which('git'),
      node: process.execPath,
      // What the isolation probe runs inside the sandbox.
      test: which('test'),
    });
  });
  afterAll(async () => {
    await github.close();
    fs.rmSync(base, { force: true, recursive: true });
  });

  beforeEach(() => {
    home = fs.mkdtempSync(path.join(base, 'home-'));
    repo = fs.mkdtempSync(path.join(base, 'repo-'));
    // A ready repository has a commit: `git init` alone is a warning of its own (agents in place).
    initRepository(repo);
  });

  function logIn(): void {
    // The files the CLIs themselves read: Codex's auth.json (an API key login) and Claude Code's
    // stored claude.ai login. Neither status command calls a model.
    fs.mkdirSync(path.join(home, '.codex'));
    fs.writeFileSync(
      path.join(home, '.codex', 'auth.json'),
      JSON.stringify({ OPENAI_API_KEY: 'sk-test-not-a-real-key' }),
    );
    fs.mkdirSync(path.join(home, '.claude'));
    fs.writeFileSync(
      path.join(home, '.claude', '.credentials.json'),
      JSON.stringify({
        claudeAiOauth: {
          accessToken: 'sk-ant-oat01-test',
          expiresAt: 4102444800000,
          refreshToken: 'sk-ant-ort01-test',
          scopes: ['user:inference', 'user:profile'],
          subscriptionType: 'pro',
        },
      }),
    );
  }

  it('passes everything on a ready machine, human-readable by default', async () => {
    logIn();
    const json = await doctor();
    expect(json.code).toBe(0);
    expect(json.report?.ok).toBe(true);
    expect(json.report?.checks.map((c) => [c.id, c.status])).toEqual([
      ['node', 'ok'],
      ['git', 'ok'],
      ['codex', 'ok'],
      ['claude', 'ok'],
      ['github', 'ok'],
      ['isolation', 'ok'],
      ['network', 'ok'],
      ['environment', 'ok'],
      ['worktrees', 'ok'],
      ['port', 'ok'],
      ['dataDirectory', 'ok'],
      ['database', 'ok'],
    ]);
    expect(json.check('network')).toMatchObject({ args: { mode: 'allow_list' }, code: 'network.allow_list' });
    expect(json.check('codex').detail).toMatch(/^codex-cli \d+\.\d+\.\d+ at .*; logged in$/);
    expect(json.check('claude').detail).toMatch(/^\d+\.\d+\.\d+ \(Claude Code\) at .*; logged in$/);
    expect(json.check('github').detail).toBe('token from GITHUB_TOKEN (octocat); scopes: repo, read:org');
    // The token went to the configured GitHub, nowhere else.
    expect(github.requests.filter((r) => r.path === '/user').map((r) => r.authorization)).toContain(
      'Bearer good-token',
    );

    const human = await doctor({ json: false });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^✓ Node\.js/m);
    expect(human.stdout).toMatch(/^✓ Codex CLI\s+codex-cli/m);
    expect(human.stdout).toContain('Ready: `agent-manager` starts Agent Manager here.');
    expect(human.stdout).not.toContain('good-token');
  }, 120_000);

  it('says when the agent CLIs are not logged in, with how to log in (a warning: runs would fail, start does not)', async () => {
    const result = await doctor();
    expect(result.code).toBe(0);
    expect(result.check('codex')).toMatchObject({ fix: 'run `codex login`', required: false, status: 'warn' });
    expect(result.check('codex').detail).toContain('not logged in');
    expect(result.check('claude')).toMatchObject({ required: false, status: 'warn' });
    expect(result.check('claude').fix).toContain('claude');
  }, 120_000);

  it('warns about one missing agent CLI and fails when neither is installed', async () => {
    const onlyClaude = await doctor({
      env: {
        PATH: pathOf({
          bwrap: which('bwrap'),
          claude: fs.realpathSync(path.join(CLIS, 'claude')),
          git: which('git'),
          node: process.execPath,
        }),
      },
    });
    expect(onlyClaude.code).toBe(0);
    expect(onlyClaude.check('codex')).toMatchObject({
      detail: '`codex` is not on the PATH; not needed while Claude Code is there (one agent CLI is enough)',
      required: false,
      status: 'warn',
    });
    expect(onlyClaude.check('codex').fix).toContain('codexExecutable');

    const neither = await doctor({ env: { PATH: pathOf({ git: which('git'), node: process.execPath }) } });
    expect(neither.code).toBe(1);
    expect(neither.report?.ok).toBe(false);
    expect(neither.check('codex')).toMatchObject({ required: true, status: 'fail' });
    expect(neither.check('claude')).toMatchObject({ required: true, status: 'fail' });
    const human = await doctor({ env: { PATH: pathOf({ git: which('git'), node: process.execPath }) }, json: false });
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('2 required checks failed.');
  }, 120_000);

  it('follows codexExecutable / claudeExecutable from the environment as start does, and says what is wrong with a configured path', async () => {
    logIn();
    const missing = path.join(base, 'no-such-codex');
    const result = await doctor({ env: { CODE_FACTORY_CODEX_EXECUTABLE: missing } });
    // Not "not on the PATH" (a path is not looked up there), and not a mere warning: its runs fail.
    expect(result.check('codex')).toMatchObject({
      detail: `${missing} (codexExecutable) does not exist: runs with Codex CLI fail`,
      required: false,
      status: 'fail',
    });
    expect(result.check('codex').fix).toContain('set codexExecutable');
    // Claude Code is there: the manager can run, so doctor passes, but does not claim all is well.
    expect(result.code).toBe(0);
    const notExecutable = path.join(base, 'codex-not-executable');
    fs.writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    const plain = await doctor({ env: { CODE_FACTORY_CODEX_EXECUTABLE: notExecutable } });
    expect(plain.check('codex').detail).toBe(
      `${notExecutable} (codexExecutable) is not an executable file: runs with Codex CLI fail`,
    );
  }, 120_000);

  it("takes Codex's API-key model provider (env_key in config.toml), like Claude Code's API key, for a login", async () => {
    // No login at all, but a Codex model provider of its own with its key in the environment.
    fs.mkdirSync(path.join(home, '.codex'));
    fs.writeFileSync(
      path.join(home, '.codex', 'config.toml'),
      [
        'model = "gpt-5"',
        'model_provider = "azure"',
        '',
        '[model_providers.azure]',
        'name = "Azure"',
        'base_url = "https://example.invalid/openai"',
        "env_key = 'AZURE_OPENAI_API_KEY'",
        '',
      ].join('\n'),
    );
    const keyed = await doctor({ env: { ANTHROPIC_API_KEY: 'sk-ant-test', AZURE_OPENAI_API_KEY: 'test-key' } });
    expect(keyed.check('codex')).toMatchObject({ fix: null, status: 'ok' });
    expect(keyed.check('codex').detail).toContain('not logged in, but runs use model provider "azure"');
    expect(keyed.check('codex').detail).toContain('with its API key in AZURE_OPENAI_API_KEY');
    expect(keyed.check('claude')).toMatchObject({ fix: null, status: 'ok' });
    // The provider's variable unset: not logged in after all.
    const unkeyed = await doctor();
    expect(unkeyed.check('codex')).toMatchObject({ fix: 'run `codex login`', status: 'warn' });
  }, 120_000);

  it('fails without git', async () => {
    const result = await doctor({
      env: { PATH: pathOf({ codex: fs.realpathSync(path.join(CLIS, 'codex')), node: process.execPath }) },
    });
    expect(result.code).toBe(1);
    expect(result.check('git')).toMatchObject({ detail: 'git is not on the PATH', required: true, status: 'fail' });
    expect(result.check('git').fix).toContain('install git');
  }, 120_000);

  it('warns outside a git repository', async () => {
    fs.rmSync(path.join(repo, '.git'), { recursive: true });
    const result = await doctor();
    expect(result.check('git').status).toBe('warn');
    expect(result.check('git').detail).toContain('is not inside a git repository');
  }, 120_000);

  it('warns, with the fix, when the repository has no commit (agents would work in the checkout)', async () => {
    fs.rmSync(path.join(repo, '.git'), { recursive: true });
    execFileSync('git', ['init', '-q'], { cwd: repo });
    const result = await doctor();
    expect(result.code).toBe(0);
    expect(result.check('git')).toMatchObject({ required: false, status: 'warn' });
    expect(result.check('git').detail).toContain(
      'has no commit yet: agents would work in place, directly in your checkout',
    );
    expect(result.check('git').fix).toContain('make a first commit');
    const human = await doctor({ json: false });
    expect(human.stdout).toMatch(/^! git\s+git version/m);
  }, 120_000);

  it('reports the GitHub token: none, rejected, short of scopes, fine-grained, unreachable', async () => {
    // Without the agent CLIs (slow to start, and beside the point here).
    const light = (env: NodeJS.ProcessEnv) =>
      doctor({ env: { PATH: pathOf({ git: which('git'), node: process.execPath }), ...env } });
    const none = await light({ GITHUB_TOKEN: '' });
    expect(none.check('github')).toMatchObject({ required: false, status: 'warn' });
    expect(none.check('github').detail).toContain('no token in GITHUB_TOKEN, GH_TOKEN or `gh auth token`');

    const fromGh = await light({ GH_TOKEN: 'good-token', GITHUB_TOKEN: '' });
    expect(fromGh.check('github')).toMatchObject({ status: 'ok' });
    expect(fromGh.check('github').detail).toContain('token from GH_TOKEN');

    const rejected = await light({ GITHUB_TOKEN: 'revoked-token' });
    expect(rejected.check('github')).toMatchObject({ status: 'fail' });
    expect(rejected.check('github').detail).toContain('is rejected');
    expect(rejected.stdout).not.toContain('revoked-token');

    const narrow = await FakeGitHubServer.start({ scopes: 'read:user', token: 'good-token' });
    const fine = await FakeGitHubServer.start({ scopes: null, token: 'good-token' });
    try {
      const short = await light({ CODE_FACTORY_GITHUB_API_URL: narrow.url });
      expect(short.check('github')).toMatchObject({ status: 'warn' });
      expect(short.check('github').detail).toContain('scopes: read:user');
      expect(short.check('github').fix).toContain('`repo` scope');
      const fineGrained = await light({ CODE_FACTORY_GITHUB_API_URL: fine.url });
      expect(fineGrained.check('github')).toMatchObject({ status: 'ok' });
      expect(fineGrained.check('github').detail).toContain('fine-grained');
    } finally {
      await narrow.close();
      await fine.close();
    }
    const closed = await FakeGitHubServer.start();
    const url = closed.url;
    await closed.close();
    const unreachable = await light({ CODE_FACTORY_GITHUB_API_URL: url });
    expect(unreachable.check('github')).toMatchObject({ status: 'warn' });
    expect(unreachable.check('github').detail).toContain('could not be reached');
  }, 180_000);

  it('warns when agents could not be isolated: bubblewrap missing, or isolation off; and what that means for their network', async () => {
    const noBwrap = await doctor({
      env: {
        PATH: pathOf({ codex: fs.realpathSync(path.join(CLIS, 'codex')), git: which('git'), node: process.execPath }),
      },
    });
    expect(noBwrap.code).toBe(0);
    expect(noBwrap.check('isolation')).toMatchObject({ required: false, status: 'warn' });
    expect(noBwrap.check('isolation').detail).toContain('bubblewrap (`bwrap`) is not installed');
    expect(noBwrap.check('isolation').fix).toContain('apt-get install bubblewrap');

    // Without a sandbox, no network of their own either: runs would be refused, and doctor says so (issue 45).
    expect(noBwrap.check('network')).toMatchObject({
      code: 'network.unavailable',
      detail: 'agent runs will be refused (network_isolation_unavailable): bubblewrap (`bwrap`) is not installed',
      required: false,
      status: 'warn',
    });

    const off = await doctor({ env: { CODE_FACTORY_AGENT_ISOLATION: 'off' } });
    expect(off.check('isolation').detail).toContain('agentIsolation is "off"');
    const open = await doctor({ env: { CODE_FACTORY_NETWORK_MODE: 'open' } });
    expect(open.check('network')).toMatchObject({ code: 'network.open', status: 'warn' });
  }, 120_000);

  it('lists what an agent’s environment holds, and each secret kept from it with whether its value can be read, never the value', async () => {
    const readable = path.join(home, 'registry-token');
    fs.writeFileSync(readable, 'doctor-file-5ecret', { mode: 0o600 });
    const shared = path.join(home, 'shared-token');
    fs.writeFileSync(shared, 'doctor-shared-5ecret', { mode: 0o644 });
    fs.chmodSync(shared, 0o644);
    const secrets = (list: object[]) => JSON.stringify(list);
    const fine = await doctor({
      env: {
        CODE_FACTORY_AGENT_ENVIRONMENT_PASS: 'JAVA_HOME,MY_*',
        CODE_FACTORY_SECRETS: secrets([
          { header: 'Authorization', host: 'npm.pkg.github.com', name: 'NPM_TOKEN' },
          { file: readable, name: 'REGISTRY_TOKEN' },
        ]),
        NPM_TOKEN: 'doctor-env-5ecret',
      },
    });
    expect(fine.check('environment')).toMatchObject({
      code: 'environment.ok',
      detail:
        'agents see what a shell and their CLI need, and passed: JAVA_HOME, MY_*; secrets kept from them: NPM_TOKEN (header for npm.pkg.github.com), REGISTRY_TOKEN',
      status: 'ok',
    });
    const missing = await doctor({
      env: { CODE_FACTORY_SECRETS: secrets([{ name: 'NPM_TOKEN' }, { file: shared, name: 'SHARED' }]) },
    });
    expect(missing.check('environment')).toMatchObject({ code: 'environment.secret_missing', status: 'warn' });
    expect(missing.check('environment').detail).toContain("the manager's environment has no NPM_TOKEN");
    expect(missing.check('environment').detail).toContain('may be read or written by others (mode 644): chmod 600 it');
    expect(JSON.stringify([fine.report, missing.report])).not.toMatch(/5ecret/);
  }, 120_000);

  it('fails when the port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const result = await doctor({ args: ['--port', String(port)] });
      expect(result.code).toBe(1);
      expect(result.check('port')).toMatchObject({ required: true, status: 'fail' });
      expect(result.check('port').detail).toContain(`127.0.0.1:${port} cannot be listened on (EADDRINUSE`);
      expect(result.check('port').fix).toContain('--port');
    } finally {
      blocker.close();
    }
  }, 120_000);

  it('fails when the data directory cannot be created', async () => {
    const file = path.join(base, 'a-file');
    fs.writeFileSync(file, '');
    const result = await doctor({ env: { CODE_FACTORY_HOME: path.join(file, 'home') } });
    expect(result.code).toBe(1);
    expect(result.check('dataDirectory')).toMatchObject({
      detail: `${file} is not a directory`,
      required: true,
      status: 'fail',
    });
    expect(fs.existsSync(path.join(file, 'home'))).toBe(false);
  }, 120_000);

  it('checks the store: the SQLite file, a PostgreSQL server that is down or refuses the login, and one that is fine', async () => {
    const light = (env: NodeJS.ProcessEnv) =>
      doctor({ env: { PATH: pathOf({ git: which('git'), node: process.execPath }), ...env } });
    const sqlite = await light({});
    expect(sqlite.check('database')).toMatchObject({ required: true, status: 'ok' });
    expect(sqlite.check('database').detail).toMatch(/^SQLite, .*factory\.sqlite \(created at first start\)$/);

    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = await light({ CODE_FACTORY_DATABASE_URL: `postgres://am:s3cret@127.0.0.1:${port}/agents` });
    expect(down.code).toBe(1);
    expect(down.check('database')).toMatchObject({ required: true, status: 'fail' });
    expect(down.check('database').detail).toContain(`cannot connect to postgres://am@127.0.0.1:${port}/agents`);
    expect(down.check('database').fix).toContain('databaseUrl');
    expect(down.stdout).not.toContain('s3cret');

    if (process.env.TEST_DATABASE_URL) {
      const url = new URL(process.env.TEST_DATABASE_URL);
      const fine = await light({ CODE_FACTORY_DATABASE_URL: url.toString() });
      expect(fine.check('database')).toMatchObject({ status: 'ok' });
      expect(fine.check('database').detail).toMatch(
        /^PostgreSQL \d+.* schema am_[0-9a-f]{16} \(created at first start\)$/,
      );
      url.username = 'nobody_here';
      const refused = await light({ CODE_FACTORY_DATABASE_URL: url.toString() });
      expect(refused.check('database')).toMatchObject({ status: 'fail' });
      expect(refused.check('database').detail).toMatch(/login is refused|nobody_here/);
    }
  }, 120_000);

  it("answers the running manager's findings at GET /api/doctor, probing at most once a minute unless asked", async () => {
    const sandbox = makeSandbox();
    const manager = await startManager({ sandbox });
    try {
      const first = await manager.api.GET('/api/doctor');
      expect(first.status).toBe(200);
      const checks = first.data!.checks as Check[];
      expect(checks.map((c) => c.id)).toEqual([
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
      // Its own port is in use by itself: reported as served, not probed.
      expect(checks.find((c) => c.id === 'port')).toMatchObject({
        detail: `serving on ${manager.origin}`,
        status: 'ok',
      });
      expect(checks.find((c) => c.id === 'database')?.status).toBe('ok');
      const again = await manager.api.GET('/api/doctor');
      expect(again.data!.checkedAt).toBe(first.data!.checkedAt);
      // Concurrent refreshes share one probe.
      const refreshed = await Promise.all(
        [1, 2, 3].map(() => manager.api.GET('/api/doctor', { params: { query: { refresh: 'true' } } })),
      );
      expect(new Set(refreshed.map((r) => r.data!.checkedAt)).size).toBe(1);
      expect(refreshed[0].data!.checkedAt > first.data!.checkedAt).toBe(true);
      // A refresh value the API does not take: untyped on purpose.
      expect((await sendUntyped(manager.origin, 'GET', '/api/doctor?refresh=maybe')).status).toBe(400);
      expect((await apiClient(manager.origin, { auth: false }).GET('/api/doctor')).status).toBe(401);

      // `agent-manager doctor` in the terminal, while the person's own manager of this workspace
      // serves on the port it checks: that manager is what serves there, not a port in use (issue 47 §5).
      const port = new URL(manager.origin).port;
      const cli = spawnSync(process.execPath, [BIN, 'doctor', '--port', port, '--json'], {
        cwd: sandbox.workspace,
        encoding: 'utf8',
        env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      });
      const report = JSON.parse(cli.stdout) as { checks: Check[] };
      expect(report.checks.find((c) => c.id === 'port')).toMatchObject({
        detail: `serving on ${manager.origin}`,
        status: 'ok',
      });
      // Another workspace asking about the same port still finds it taken, and by whom.
      const other = makeSandbox();
      initRepository(other.workspace);
      const taken = spawnSync(process.execPath, [BIN, 'doctor', '--port', port, '--json'], {
        cwd: other.workspace,
        encoding: 'utf8',
        env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      });
      other.cleanup();
      const portOfOther = (JSON.parse(taken.stdout) as { checks: Check[] }).checks.find((c) => c.id === 'port');
      expect(portOfOther).toMatchObject({ status: 'fail' });
      expect(portOfOther?.detail).toContain('EADDRINUSE');
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  }, 120_000);
});
