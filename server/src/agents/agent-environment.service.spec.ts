import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ConfigurationService } from '../core/configuration/configuration.service';
import type { Runtime } from '../core/runtime';
import { resolveWorkspace } from '../core/workspace/workspace';
import { AgentEnvironmentService } from './agent-environment.service';

describe(AgentEnvironmentService.name, () => {
  const OWNER_TOKEN = 'f'.repeat(64);
  let base: string;
  let sut: AgentEnvironmentService;
  let runtime: Runtime;
  const saved = { ...process.env };

  beforeAll(() => {
    base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-env-')));
    fs.mkdirSync(path.join(base, 'repo'));
    const paths = resolveWorkspace(path.join(base, 'repo'), path.join(base, 'home'));
    fs.mkdirSync(path.join(paths.dataDirectory, 'bin')); // where an earlier version put the launcher
    runtime = {
      configuration: new ConfigurationService(paths.defaultConfigPath, {}),
      paths,
    } as Partial<Runtime> as Runtime;
    // Whatever the manager was started with: its home, its settings, even a token by mistake.
    Object.assign(process.env, {
      CODE_FACTORY_AUTHENTICATION: 'token',
      CODE_FACTORY_HOME: path.join(base, 'home'),
      CODE_FACTORY_TOKEN: OWNER_TOKEN,
      SOME_TOOL_HOME: '/opt/tool',
      // What the person's shell exported that no agent needs (issue 45).
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      GH_TOKEN: 'gh-person',
      GITHUB_TOKEN: 'github-person',
      OPENAI_API_KEY: 'sk-openai',
      ANTHROPIC_API_KEY: 'sk-anthropic',
      SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
      LC_ALL: 'C.UTF-8',
    });
    sut = new AgentEnvironmentService(runtime);
    sut.onModuleInit();
    sut.setApiUrl('http://127.0.0.1:1/api');
  });
  afterAll(() => {
    process.env = saved;
    fs.rmSync(base, { force: true, recursive: true });
  });

  it("hands an RD agent its own context and none of the manager's settings or the owner token", () => {
    const env = sut.environment({ provider: 'codex', requirementId: 'req_1', sessionId: 'ses_1', token: 'amr_run' });
    expect(
      Object.keys(env)
        .filter((k) => k.startsWith('CODE_FACTORY_'))
        .sort(),
    ).toEqual([
      'CODE_FACTORY_API_URL',
      'CODE_FACTORY_CLI',
      'CODE_FACTORY_REQUIREMENT_ID',
      'CODE_FACTORY_SESSION_ID',
      'CODE_FACTORY_TOKEN',
    ]);
    expect(env.CODE_FACTORY_TOKEN).toBe('amr_run');
    expect(Object.values(env).join('\n')).not.toContain(OWNER_TOKEN);
    // Only what a shell and its CLI need (issue 45): not the person's tokens, agent, cloud keys,
    // the other provider's key, or whatever else their shell exported.
    expect(env).toMatchObject({ HOME: process.env.HOME, LC_ALL: 'C.UTF-8', OPENAI_API_KEY: 'sk-openai' });
    for (const name of [
      'SOME_TOOL_HOME',
      'AWS_SECRET_ACCESS_KEY',
      'GH_TOKEN',
      'GITHUB_TOKEN',
      'SSH_AUTH_SOCK',
      'ANTHROPIC_API_KEY',
    ]) {
      expect(env[name]).toBeUndefined();
    }
  });

  it('adds the names the person lists (agentEnvironmentPass), a prefix with *; never a CODE_FACTORY_ one', async () => {
    await runtime.configuration.update({ agentEnvironmentPass: ['SOME_TOOL_*', 'CODE_FACTORY_HOME'] });
    try {
      const env = sut.environment({
        provider: 'claude-code',
        requirementId: 'req_1',
        sessionId: 'ses_1',
        token: 'amr_run',
      });
      expect(env).toMatchObject({ ANTHROPIC_API_KEY: 'sk-anthropic', SOME_TOOL_HOME: '/opt/tool' });
      expect(env.OPENAI_API_KEY).toBeUndefined();
      expect(env.CODE_FACTORY_HOME).toBeUndefined();
    } finally {
      await runtime.configuration.update({ agentEnvironmentPass: [] });
    }
  });

  it("gives a reviewer no CODE_FACTORY_* variable, but the person's GitHub token (publishing its review is its job)", () => {
    const env = sut.reviewerEnvironment('codex');
    expect(Object.keys(env).filter((k) => k.startsWith('CODE_FACTORY_'))).toEqual([]);
    expect(Object.values(env).join('\n')).not.toContain(OWNER_TOKEN);
    expect(env).toMatchObject({ GH_TOKEN: 'gh-person', GITHUB_TOKEN: 'github-person' });
    expect(env.SSH_AUTH_SOCK).toBeUndefined();
  });

  it('writes the launcher outside the data directory (which agents cannot see), first on PATH', () => {
    const env = sut.environment({ provider: 'codex', requirementId: 'req_1', sessionId: 'ses_1', token: 'amr_run' });
    expect(env.CODE_FACTORY_CLI).toBe(
      path.join(runtime.paths.home, 'bin', path.basename(runtime.paths.dataDirectory), 'code-factory-cli'),
    );
    expect(path.relative(path.join(runtime.paths.home, 'workspaces'), env.CODE_FACTORY_CLI).startsWith('..')).toBe(
      true,
    );
    expect(env.PATH?.split(path.delimiter)[0]).toBe(path.dirname(env.CODE_FACTORY_CLI));
    expect(fs.statSync(env.CODE_FACTORY_CLI).mode & 0o111).not.toBe(0);
    expect(fs.readFileSync(env.CODE_FACTORY_CLI, 'utf8')).not.toMatch(/[0-9a-f]{64}/);
    expect(fs.existsSync(path.join(runtime.paths.dataDirectory, 'bin'))).toBe(false);
  });
});
