import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { FakeGitHubServer } from './support/fake-github-server';
import { apiClient, ok } from './support/api';
import { type Json, registerToken } from './support/http';
import { createRequirement, git, initRepository, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { IDLE_AGENT, ROOT, Sandbox, makeSandbox } from './support/manager-process';

const CLI = path.join(ROOT, 'bin', 'code-factory-cli.js');

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: Json;
}

/** Runs the built CLI as an agent would: a child process with only the given environment. */
function cli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        // not JSON (help text)
      }
      resolve({ code, json, stderr, stdout });
    });
    child.stdin.end(stdin ?? '');
  });
}

const COMMANDS: Array<[string[], string[]]> = [
  [
    ['pr', 'register'],
    ['--url', '--repository', '--number', '--title', '--base-branch', '--head-branch', '--head-sha', '--status'],
  ],
  [
    ['requirement', 'propose'],
    [
      '--title',
      '--description',
      '--description-file',
      '--provider',
      '--model',
      '--reasoning-effort',
      '--start',
      '--depends-on',
      '--auto-start',
      '--auto-review',
      '--auto-review-rounds',
      '--budget-tokens',
      '--budget-usd',
    ],
  ],
  [
    ['requirement', 'action'],
    ['--requirement-id', '--start', '--stop', '--delete', '--done'],
  ],
  [['requirement', 'related'], []],
  [['requirement', 'landing'], []],
  [
    ['requirement', 'message'],
    ['--requirement-id', '--message'],
  ],
  [
    ['timer', 'register'],
    ['--description', '--after-seconds', '--repeat'],
  ],
  [['timer', 'show'], []],
  [['timer', 'cancel'], ['--id']],
  [['review', 'comments'], []],
  [['preview', 'start'], ['--wait']],
  [['preview', 'status'], []],
  [['preview', 'output'], ['--lines']],
  [
    ['review', 'reply'],
    ['--id', '--body', '--resolve'],
  ],
];

describe('code-factory-cli', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  /** The typed client with the workspace token. */
  const api = () => apiClient(manager.url);
  let parent: { id: string; session: { id: string } };
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: {
        ...process.env,
        CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_HOME: sandbox.home,
      },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    parent = await ok(api().POST('/api/requirements', { body: { provider: 'codex', title: 'parent' } }));
    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: parent.id, runId: 'run_cli_test', sessionId: parent.session.id });
    env = {
      CODE_FACTORY_API_URL: `${manager.url}/api`,
      CODE_FACTORY_REQUIREMENT_ID: parent.id,
      CODE_FACTORY_SESSION_ID: parent.session.id,
      CODE_FACTORY_TOKEN: token,
      // No GitHub token: `pr register --url` must not reach out to github.com from a test.
      GH_TOKEN: '',
      GITHUB_TOKEN: '',
    };
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it.each(COMMANDS)('%s --help describes the command, every option and an example', async (command, options) => {
    const res = await cli([...command, '--help'], {});
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`Usage: code-factory-cli ${command.join(' ')}`);
    for (const option of options) {
      expect(res.stdout).toContain(option);
    }
    expect(res.stdout).toMatch(/Examples?:\n {2}code-factory-cli /);
    expect(res.stdout).toContain('CODE_FACTORY_API_URL');
  });

  it('the whole loop: propose, related, message, act, timers and PR registration, with JSON on stdout', async () => {
    const descriptionFile = path.join(sandbox.workspace, 'plan.md');
    fs.writeFileSync(descriptionFile, '# Plan\n\nSplit the parser into a lexer and a parser.\n');
    const proposed = await cli(
      ['requirement', 'propose', '--title', 'Split the parser', '--description-file', descriptionFile],
      env,
    );
    expect(proposed).toMatchObject({ code: 0, stderr: '' });
    expect(proposed.json).toMatchObject({
      createdBy: 'rd_agent',
      description: '# Plan\n\nSplit the parser into a lexer and a parser.\n',
      parentRequirementId: parent.id,
      status: 'todo',
    });
    const child = proposed.json;

    const related = await cli(['requirement', 'related'], env);
    expect(related.code).toBe(0);
    expect(related.json).toMatchObject({ children: [{ id: child.id }], parent: null });

    const messaged = await cli(
      ['requirement', 'message', '--requirement-id', child.id, '--message', 'Use contract version 2.'],
      env,
    );
    expect(messaged.code).toBe(0);
    expect(messaged.json).toMatchObject({
      message: { author: 'rd_agent', body: 'Use contract version 2.', sourceRequirementId: parent.id },
      queued: false,
      targetRequirementId: child.id,
    });

    const stopped = await cli(['requirement', 'action', '--requirement-id', child.id, '--stop'], env);
    expect(stopped.code).toBe(0);
    expect(stopped.json).toMatchObject({ accepted: true, action: 'stop' });

    const registered = await cli(
      ['timer', 'register', '--description', 'Check compiler status', '--after-seconds', '900', '--repeat'],
      env,
    );
    expect(registered.code).toBe(0);
    expect(registered.json).toMatchObject({
      description: 'Check compiler status',
      intervalSeconds: 900,
      schedule: 'recurring',
      status: 'active',
    });
    const shown = await cli(['timer', 'show'], env);
    expect(shown.json.items).toEqual([expect.objectContaining({ id: registered.json.id, status: 'active' })]);
    const cancelled = await cli(['timer', 'cancel', '--id', registered.json.id], env);
    expect(cancelled.json).toMatchObject({ id: registered.json.id, status: 'cancelled' });

    const pr = await cli(
      [
        'pr',
        'register',
        '--url',
        'https://github.com/org/repo/pull/7',
        '--title',
        'Split the parser',
        '--base-branch',
        'main',
        '--head-branch',
        'split',
        '--head-sha',
        'abcdef1',
        '--status',
        'draft',
      ],
      env,
    );
    expect(pr.code).toBe(0);
    expect(pr.json).toMatchObject({
      number: 7,
      repository: 'org/repo',
      requirementId: parent.id,
      status: 'draft',
      url: 'https://github.com/org/repo/pull/7',
    });
    expect(
      (await ok(api().GET('/api/pull-requests', { params: { query: { requirementId: parent.id } } }))).items,
    ).toHaveLength(1);
  });

  it('pr register --url fills every field from GitHub, asked by Agent Manager with its own token (the agent holds none; explicit flags win)', async () => {
    const github = await FakeGitHubServer.start({ token: 'ghp_cli_test' });
    // A manager of its own that has the token (the GitHub client reads it from the environment
    // at start); the agent's environment below has none (issue 45).
    const own = makeSandbox();
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = 'ghp_cli_test';
    let withToken: RunningManager | undefined;
    try {
      withToken = await startManager({
        env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: own.home },
        overrides: { githubApiUrl: github.url, port: 0 },
        workspace: own.workspace,
      });
      registerToken(withToken.url, withToken.app.get(LocalTokenService).value);
      const requirement = await ok(
        apiClient(withToken.url).POST('/api/requirements', { body: { provider: 'codex', title: 'with GitHub' } }),
      );
      const agentEnv: Record<string, string> = {
        ...env,
        CODE_FACTORY_API_URL: `${withToken.url}/api`,
        CODE_FACTORY_REQUIREMENT_ID: requirement.id,
        CODE_FACTORY_SESSION_ID: requirement.session.id,
        CODE_FACTORY_TOKEN: withToken.app.get(RunCredentialsService).issue({
          requirementId: requirement.id,
          runId: 'run_cli_github',
          sessionId: requirement.session.id,
        }),
      };
      expect([agentEnv.GITHUB_TOKEN, agentEnv.GH_TOKEN]).toEqual(['', '']);
      const pr = github.addPullRequest({
        baseBranch: 'develop',
        headBranch: 'feature/lexer',
        isDraft: true,
        number: 77,
        repository: 'Org/Lexer',
        title: 'Split the lexer',
      });
      const res = await cli(['pr', 'register', '--url', 'https://github.com/Org/Lexer/pull/77'], agentEnv);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      expect(res.json).toMatchObject({
        baseBranch: 'develop',
        headBranch: 'feature/lexer',
        headSha: pr.headSha,
        number: 77,
        repository: 'Org/Lexer',
        status: 'draft',
        title: 'Split the lexer',
      });
      const titled = await cli(
        ['pr', 'register', '--url', 'https://github.com/Org/Lexer/pull/77', '--title', 'Split the lexer (v2)'],
        agentEnv,
      );
      expect(titled.json).toMatchObject({ status: 'draft', title: 'Split the lexer (v2)' });
      const missing = await cli(['pr', 'register', '--url', 'https://github.com/Org/Lexer/pull/78'], agentEnv);
      expect(missing).toMatchObject({ code: 1, stdout: '' });
      expect(missing.stderr).toMatch(
        /^code-factory-cli: GitHub lookup of Org\/Lexer#78 failed: .*pull_request_not_found/,
      );
    } finally {
      if (saved === undefined) {
        delete process.env.GITHUB_TOKEN;
      } else {
        process.env.GITHUB_TOKEN = saved;
      }
      await withToken?.stop();
      own.cleanup();
      await github.close();
    }
  });

  it('propose --depends-on (repeatable, :merged by default or :done) and --auto-start', async () => {
    const first = await cli(['requirement', 'propose', '--title', 'API first', '--description', 'the API'], env);
    const second = await cli(['requirement', 'propose', '--title', 'Docs first', '--description', 'the docs'], env);
    const waiting = await cli(
      [
        'requirement',
        'propose',
        '--title',
        'Use both',
        '--description',
        'after both',
        '--depends-on',
        first.json.id,
        '--depends-on',
        `${second.json.id}:done`,
        '--auto-start',
      ],
      env,
    );
    expect(waiting).toMatchObject({ code: 0, stderr: '' });
    expect(waiting.json).toMatchObject({
      autoStart: true,
      dependsOn: [
        { requirementId: first.json.id, state: 'pending', until: 'merged' },
        { requirementId: second.json.id, state: 'pending', until: 'done' },
      ],
    });
    // A budget (issue 18 §1): either limit, sent as the API's budget.
    const budgeted = await cli(
      [
        'requirement',
        'propose',
        '--title',
        'Cheap',
        '--description',
        'y',
        '--budget-tokens',
        '20000',
        '--budget-usd',
        '1.5',
      ],
      env,
    );
    expect(budgeted).toMatchObject({ code: 0, json: { budget: { maxCostUsd: 1.5, maxTokens: 20_000 } } });
    const tokensOnly = await cli(
      ['requirement', 'propose', '--title', 'Tokens only', '--description', 'y', '--budget-tokens', '500'],
      env,
    );
    expect(tokensOnly.json.budget).toEqual({ maxCostUsd: null, maxTokens: 500 });
    const badBudget = await cli(
      ['requirement', 'propose', '--title', 'x', '--description', 'y', '--budget-usd', 'lots'],
      env,
    );
    expect(badBudget).toMatchObject({ code: 1, stdout: '' });
    expect(badBudget.stderr).toMatch(
      /^code-factory-cli: --budget-usd takes an amount from 0.01 to 1000000, not "lots"\n$/,
    );
    const bad = await cli(
      ['requirement', 'propose', '--title', 'x', '--description', 'y', '--depends-on', `${first.json.id}:soon`],
      env,
    );
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toMatch(/^code-factory-cli: --depends-on takes <requirementId>/);
  });

  it("an agent's proposal gets at most its parent's remaining budget: neither the CLI nor raw HTTP with the run credential clears or raises it", async () => {
    // Issue 25 §4: a Requirement capped at 20 tokens whose agent proposes a child.
    const capped = await ok(
      api().POST('/api/requirements', {
        body: { budget: { maxTokens: 20 }, provider: 'codex', title: 'Capped parent' },
      }),
    );
    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: capped.id, runId: 'run_cli_budget', sessionId: capped.session.id });
    const cappedEnv = {
      ...env,
      CODE_FACTORY_REQUIREMENT_ID: capped.id,
      CODE_FACTORY_SESSION_ID: capped.session.id,
      CODE_FACTORY_TOKEN: token,
    };
    const propose = (...flags: string[]) =>
      cli(['requirement', 'propose', '--title', 'Follow-up', '--description', 'more work', ...flags], cappedEnv);

    const raised = await propose('--budget-tokens', '2000000000', '--budget-usd', '5');
    expect(raised).toMatchObject({
      code: 0,
      json: { budget: { maxCostUsd: 5, maxTokens: 20 }, parentRequirementId: capped.id, warnings: ['budget_clamped'] },
    });
    // Without --budget-* it gets the parent's room (no default is configured), not "no limit".
    expect((await propose()).json).toMatchObject({ budget: { maxCostUsd: null, maxTokens: 20 }, warnings: [] });
    expect((await propose('--budget-tokens', '5')).json).toMatchObject({
      budget: { maxCostUsd: null, maxTokens: 5 },
      warnings: [],
    });

    // HTTP with the run's credential: a null budget and an immediate start.
    const asRun = apiClient(manager.url, { auth: token });
    const body: Schemas['ProposeRequirementDto'] = {
      budget: null,
      description: 'uncapped?',
      sourceSessionId: capped.session.id,
      start: true,
      title: 'Escape over HTTP',
    };
    const escaped = await asRun.POST('/api/agent/requirements', { body });
    expect(escaped.status).toBe(201);
    expect(escaped.data).toMatchObject({
      budget: { maxCostUsd: null, maxTokens: 20 },
      status: 'doing',
      warnings: ['budget_clamped'],
    });
    const huge = await asRun.POST('/api/agent/requirements', {
      body: { ...body, budget: { maxTokens: 2_000_000_000 }, start: false },
    });
    expect(huge.data).toMatchObject({ budget: { maxTokens: 20 }, warnings: ['budget_clamped'] });

    // Where no ancestor has a budget, the configured default caps what an agent gives its child.
    expect((await api().PATCH('/api/configuration', { body: { defaultBudgetMaxTokens: 777 } })).status).toBe(200);
    try {
      const fromUncapped = await cli(
        ['requirement', 'propose', '--title', 'y', '--description', 'y', '--budget-tokens', '2000000000'],
        env,
      );
      expect(fromUncapped.json).toMatchObject({
        budget: { maxCostUsd: null, maxTokens: 777 },
        warnings: ['budget_clamped'],
      });
    } finally {
      await api().PATCH('/api/configuration', { body: { defaultBudgetMaxTokens: null } });
    }
    // A person (the owner's token) still sets any budget, none included.
    const byPerson = await api().POST('/api/agent/requirements', {
      body: { ...body, budget: null, parentRequirementId: capped.id, start: false },
    });
    expect(byPerson.data).toMatchObject({ budget: null, warnings: [] });
  });

  it("refusals: one line on stderr with the server's reason, exit code 1, nothing on stdout", async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ['timer', 'cancel', '--id', 'tmr_00000000-0000-4000-8000-000000000000'],
        /^code-factory-cli: timer cancel refused \(404 timer_not_found\): Timer tmr_0.* not found\n$/,
      ],
      [
        ['timer', 'register', '--description', 'x', '--after-seconds', '30'],
        /^code-factory-cli: --after-seconds must be a whole number from 60 to 31536000\n$/,
      ],
      [
        ['requirement', 'action', '--requirement-id', parent.id, '--start'],
        /^code-factory-cli: start refused \(409 not_proposed_by_source\): /,
      ],
      [
        ['requirement', 'action', '--requirement-id', parent.id, '--start', '--done'],
        /^code-factory-cli: give exactly one of --start, --stop, --delete, --done\n$/,
      ],
      [
        ['requirement', 'message', '--requirement-id', 'req_00000000-0000-4000-8000-000000000000', '--message', 'hi'],
        /^code-factory-cli: message refused \(404 requirement_not_found\)/,
      ],
      [
        ['requirement', 'propose', '--title', 'x'],
        /^code-factory-cli: give exactly one of --description and --description-file\n$/,
      ],
      [
        ['requirement', 'propose', '--title', 'x', '--description-file', '/nonexistent/plan.md'],
        /^code-factory-cli: cannot read --description-file \/nonexistent\/plan.md: ENOENT\n$/,
      ],
      [
        ['pr', 'register', '--url', 'https://github.com/org/repo/pull/8'],
        /^code-factory-cli: missing --title, --base-branch, --head-branch, --head-sha, --status \(GitHub was not asked/,
      ],
      [
        ['pr', 'register', '--url', 'https://example.com/nope'],
        /^code-factory-cli: --url must be a pull request address/,
      ],
      [['requirement'], /^code-factory-cli: choose one: requirement propose/],
    ];
    for (const [args, expected] of cases) {
      const res = await cli(args, env);
      expect({ args, code: res.code, stderr: res.stderr, stdout: res.stdout }).toEqual({
        args,
        code: 1,
        stderr: expect.stringMatching(expected),
        stdout: '',
      });
      expect(res.stderr.trim().split('\n')).toHaveLength(1);
    }
    const badToken = await cli(['timer', 'show'], { ...env, CODE_FACTORY_TOKEN: 'amr_revoked' });
    expect(badToken).toMatchObject({ code: 1, stdout: '' });
    expect(badToken.stderr).toMatch(/^code-factory-cli: timer show refused \(401/);
  });

  it('names missing environment, and an unreachable or silent server, in one line', async () => {
    const missing = await cli(['timer', 'show'], { CODE_FACTORY_API_URL: env.CODE_FACTORY_API_URL });
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe(
      'code-factory-cli: CODE_FACTORY_REQUIREMENT_ID, CODE_FACTORY_SESSION_ID are not set: run this inside an Agent Manager agent run, which sets them\n',
    );
    const badUrl = await cli(['timer', 'show'], { ...env, CODE_FACTORY_API_URL: 'localhost:4310' });
    expect(badUrl.stderr).toMatch(
      /^code-factory-cli: CODE_FACTORY_API_URL must be the manager's API URL ending in \/api/,
    );

    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const down = await cli(['timer', 'show'], { ...env, CODE_FACTORY_API_URL: `http://127.0.0.1:${port}/api` });
    expect(down).toMatchObject({ code: 1, stdout: '' });
    expect(down.stderr).toBe(
      `code-factory-cli: timer show: cannot reach Agent Manager at http://127.0.0.1:${port}/api (ECONNREFUSED); is it still running?\n`,
    );

    // Accepts connections and never answers.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentUrl = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/api`;
    const started = Date.now();
    const hung = await cli(['timer', 'show'], {
      ...env,
      CODE_FACTORY_API_URL: silentUrl,
      CODE_FACTORY_TIMEOUT_SECONDS: '1',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hung).toMatchObject({ code: 1, stdout: '' });
    expect(hung.stderr).toBe(`code-factory-cli: timer show: no answer from Agent Manager at ${silentUrl} within 1 s\n`);
    sockets.forEach((s) => s.destroy());
    silent.close();
  });
});

/**
 * Issue 28 §5: an agent sees the conflict radar for its own Requirement, through the command and
 * through the MCP tool of `code-factory-cli mcp` (both real child processes), on a real
 * repository where three Requirements' runs (the synthetic worktree agent) committed: A and B
 * change the same line, C another file, and then the person changed that line on main too.
 */
describe('code-factory-cli requirement landing and the requirement_landing tool', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  let a: Schemas['RequirementResponseDto'];
  let b: Schemas['RequirementResponseDto'];
  let c: Schemas['RequirementResponseDto'];
  let ownerToken: string;
  /** The run environment of Requirement `of`, with a run credential (or `token`) of its own. */
  const runEnv = (of: Schemas['RequirementResponseDto'], token?: string | null): Record<string, string> => {
    const credential =
      token === undefined
        ? manager.app
            .get(RunCredentialsService)
            .issue({ requirementId: of.id, runId: `run_landing_${of.id}`, sessionId: of.session.id })
        : token;
    return {
      CODE_FACTORY_API_URL: `${manager.url}/api`,
      CODE_FACTORY_REQUIREMENT_ID: of.id,
      CODE_FACTORY_SESSION_ID: of.session.id,
      ...(credential === null ? {} : { CODE_FACTORY_TOKEN: credential }),
      GH_TOKEN: '',
      GITHUB_TOKEN: '',
    };
  };
  const worked = async (title: string, command: string) => {
    const requirement = await createRequirement(withApi(), { title });
    await startRun(withApi(), requirement.id, sh(command));
    const done = await settled(withApi(), requirement.id, 1);
    expect(done.run.status).toBe('succeeded');
    return done.requirement;
  };
  const mcp = async (env: Record<string, string>) => {
    const transport = new StdioClientTransport({
      args: [CLI, 'mcp'],
      command: process.execPath,
      env: { PATH: process.env.PATH ?? '', ...env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'landing-e2e', version: '1.0.0' });
    await client.connect(transport);
    return client;
  };
  const callTool = async (client: Client) => {
    const result = (await client.callTool({ arguments: {}, name: 'requirement_landing' })) as CallToolResult;
    return {
      isError: result.isError === true,
      text: result.content.map((block) => (block.type === 'text' ? block.text : '')).join(''),
    };
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'a.txt': 'one\ntwo\nthree\n' });
    manager = await startWorktreeManager(sandbox);
    ownerToken = manager.app.get(LocalTokenService).value;
    a = await worked('Say A', "printf 'one\\nA\\nthree\\n' > a.txt && git commit -qam 'A says A'");
    b = await worked('Say B', "printf 'one\\nB\\nthree\\n' > a.txt && git commit -qam 'B says B'");
    c = await worked('Add C', "echo c > c.txt && git add c.txt && git commit -qm 'C adds c.txt'");
    // The person moves main under all three, on the line A and B change.
    fs.writeFileSync(path.join(sandbox.workspace, 'a.txt'), 'one\nmain\nthree\n');
    git(sandbox.workspace, 'commit', '-qam', 'main says main');
  }, 120_000);

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('answers for its own Requirement: the conflict with the base and with B, file by file, and says to rebase', async () => {
    const res = await cli(['requirement', 'landing'], runEnv(a));
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.json).toMatchObject({
      baseRef: 'main',
      branch: a.worktree!.branch,
      isolation: 'worktree',
      landing: {
        baseSha: git(sandbox.workspace, 'rev-parse', 'main').trim(),
        behindBy: 1,
        conflictPaths: ['a.txt'],
        conflictsWith: [{ paths: ['a.txt'], requirementId: b.id, title: 'Say B' }],
        landedAt: null,
        mergesCleanly: false,
      },
      requirementId: a.id,
      title: 'Say A',
    });
    expect(res.json.summary).toContain(`${a.worktree!.branch} conflicts with main in a.txt`);
    expect(res.json.summary).toContain('`git rebase main`');
    expect(res.json.summary).toContain(`"Say B" (${b.id}) in a.txt`);

    // C changed another file: clean, one commit behind, conflicting with nobody.
    const clean = await cli(['requirement', 'landing'], runEnv(c));
    expect(clean.json).toMatchObject({
      landing: { behindBy: 1, conflictPaths: [], conflictsWith: [], mergesCleanly: true },
      requirementId: c.id,
    });
    expect(clean.json.summary).toBe(
      `${c.worktree!.branch} merges cleanly onto main. main has 1 commit your branch lacks.`,
    );
  });

  it('the MCP tool answers the same, read-only, for its own Requirement only', async () => {
    const client = await mcp(runEnv(a));
    try {
      const tools = (await client.listTools()).tools;
      const tool = tools.find((t) => t.name === 'requirement_landing');
      expect(tool).toMatchObject({ annotations: { readOnlyHint: true } });
      expect(tool!.description).toMatch(/rebase onto the base/);
      const answer = await callTool(client);
      expect(answer.isError).toBe(false);
      const parsed = JSON.parse(answer.text);
      const viaCli = (await cli(['requirement', 'landing'], runEnv(a))).json;
      expect(parsed).toEqual({ ...viaCli, landing: { ...viaCli.landing, checkedAt: parsed.landing.checkedAt } });
    } finally {
      await client.close();
    }
    // A's credential naming B's Requirement: refused by the server, over MCP and in the CLI.
    const borrowed = { ...runEnv(b, null), CODE_FACTORY_TOKEN: runEnv(a).CODE_FACTORY_TOKEN };
    const other = await mcp(borrowed);
    try {
      const refused = await callTool(other);
      expect(refused).toEqual({
        isError: true,
        text: expect.stringMatching(/^landing refused \(403 outside_run_scope\): this run acts for Requirement /),
      });
    } finally {
      await other.close();
    }
    const viaCli = await cli(['requirement', 'landing'], borrowed);
    expect(viaCli).toMatchObject({ code: 1, stdout: '' });
    expect(viaCli.stderr).toMatch(/^code-factory-cli: landing refused \(403 outside_run_scope\)/);
  });

  it('is refused without a run credential: the owner token, none, a revoked one', async () => {
    for (const [token, expected] of [
      [ownerToken, /^landing refused \(403 agent_credential_required\): /],
      [null, /^landing refused \(401 /],
      ['amr_revoked', /^landing refused \(401 /],
    ] as const) {
      const client = await mcp(runEnv(a, token));
      try {
        const answer = await callTool(client);
        expect(answer).toEqual({ isError: true, text: expect.stringMatching(expected) });
      } finally {
        await client.close();
      }
      const res = await cli(['requirement', 'landing'], runEnv(a, token));
      expect(res).toMatchObject({ code: 1, stdout: '' });
      expect(res.stderr.replace(/^code-factory-cli: /, '')).toMatch(expected);
    }
    // Over HTTP, the owner's token too: the owner reads the whole radar at GET /api/conflicts instead.
    const asOwner = await api().GET('/api/agent/requirements/{id}/landing', { params: { path: { id: a.id } } });
    expect(asOwner.status).toBe(403);
    const { pairs } = await ok(api().GET('/api/conflicts'));
    expect(pairs.map((pair) => ({ paths: pair.paths, requirements: [pair.a, pair.b].sort() }))).toEqual([
      { paths: ['a.txt'], requirements: [a.id, b.id].sort() },
    ]);
  });
});
