import * as fs from 'node:fs';
import * as path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { ok } from './support/api';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

// `agent-manager mcp` as a person's assistant runs it: a child process over stdio, driven by the
// official SDK client, against a real manager (real SQLite file, real HTTP) found through the
// workspace lock and token. Runs use the scripted agent (it registers a PR when told `mode:pr`).

jest.setTimeout(60_000);

const AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'scripted-agent.js');
const OWNER_TOOLS = [
  'confirm',
  'create_requirement',
  'get_requirement',
  'interrupt',
  'list_pull_requests',
  'list_requirements',
  'list_timers',
  'move',
  'reply',
  'request_review',
  'start',
];

async function connect(sandbox: Sandbox, workspace = sandbox.workspace): Promise<Client> {
  const transport = new StdioClientTransport({
    args: [path.join(ROOT, 'bin', 'agent-manager.js'), 'mcp', '--workspace', workspace],
    command: process.execPath,
    env: { CODE_FACTORY_HOME: sandbox.home, PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'owner-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** The tool's JSON answer; fails the test with its message when the tool reported an error. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ arguments: args, name })) as CallToolResult;
  const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  if (result.isError) {
    throw new Error(`${name} failed: ${text}`);
  }
  return JSON.parse(text);
}

async function refusal(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ arguments: args, name })) as CallToolResult;
  expect(result.isError).toBe(true);
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

describe('agent-manager mcp (the owner’s tools)', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let client: Client;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({
      env: {
        CODE_FACTORY_AGENT_ENVIRONMENT_PASS: 'SCRIPTED_AGENT_DELAY_MS',
        CODE_FACTORY_CODEX_EXECUTABLE: AGENT,
        SCRIPTED_AGENT_DELAY_MS: '0',
      },
      sandbox,
    });
    client = await connect(sandbox);
  });

  afterAll(async () => {
    await client?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('initializes and lists the ten owner tools with their schemas', async () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'agent-manager' });
    expect(client.getInstructions()).toMatch(/owner/);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(OWNER_TOOLS);
    const create = tools.find((tool) => tool.name === 'create_requirement')!;
    expect(create.inputSchema).toMatchObject({
      properties: { provider: { enum: ['codex', 'claude-code'] }, title: { maxLength: 200 } },
      required: ['provider', 'title'],
    });
  });

  it('creates, lists, reads, starts, replies to, confirms and interrupts Requirements as the owner', async () => {
    const created = await call(client, 'create_requirement', {
      description: 'Register one PR.',
      provider: 'codex',
      title: 'Owner via MCP',
    });
    expect(created).toMatchObject({ createdBy: 'human', provider: 'codex', status: 'todo', title: 'Owner via MCP' });
    expect(await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: created.id } } }))).toMatchObject(
      { id: created.id, title: 'Owner via MCP' },
    );

    const listed = await call(client, 'list_requirements', { limit: 10, status: 'todo' });
    expect(listed.items.map((r: { id: string }) => r.id)).toContain(created.id);

    expect(
      await call(client, 'start', { message: 'mode:pr pr#7 repo:org/owner-mcp', requirementId: created.id }),
    ).toMatchObject({ accepted: true });
    await until(
      'the run to register the PR and wait for confirmation',
      async () =>
        (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: created.id } } }))).status ===
        'waiting_confirmation',
      30_000,
      100,
    );

    const read = await call(client, 'get_requirement', { limit: 1, requirementId: created.id });
    expect(read.requirement).toMatchObject({ id: created.id, status: 'waiting_confirmation' });
    expect(read.messages.items).toEqual([
      expect.objectContaining({ author: 'human', body: 'mode:pr pr#7 repo:org/owner-mcp', sequence: 1 }),
    ]);
    expect(read.messages.nextCursor).toEqual(expect.any(String));
    const rest = await call(client, 'get_requirement', { cursor: read.messages.nextCursor, requirementId: created.id });
    expect(rest.messages.items).toContainEqual(
      expect.objectContaining({ author: 'rd_agent', body: 'Registered PR 7.' }),
    );

    const prs = await call(client, 'list_pull_requests', { requirementId: created.id });
    expect(prs.items).toEqual([expect.objectContaining({ number: 7, repository: 'org/owner-mcp', status: 'open' })]);
    const review = await call(client, 'request_review', {
      prompt: 'Check the tests',
      provider: 'codex',
      pullRequestId: prs.items[0].id,
    });
    expect(review).toMatchObject({
      accepted: true,
      pullRequestId: prs.items[0].id,
      reviewRequest: { prompt: 'Check the tests', provider: 'codex' },
      run: { role: 'reviewer' },
    });

    expect(await call(client, 'confirm', { requirementId: created.id })).toMatchObject({ status: 'done' });

    // A reply reopens it in the same session; interrupt stops the run it started.
    expect(await call(client, 'reply', { message: 'mode:hang', requirementId: created.id })).toMatchObject({
      accepted: true,
    });
    await until(
      'the reopened run',
      async () =>
        (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: created.id } } }))).items[0]
          ?.status === 'running',
      30_000,
      100,
    );
    expect(await call(client, 'interrupt', { mode: 'stop', requirementId: created.id })).toMatchObject({
      accepted: true,
    });
    await until(
      'the run to be cancelled',
      async () =>
        (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: created.id } } }))).items[0]
          ?.status === 'cancelled',
      30_000,
      100,
    );

    expect(await call(client, 'list_timers', { requirementId: created.id })).toEqual({ items: [], nextCursor: null });
  });

  it('refuses bad input and illegal changes with the reason, writing nothing', async () => {
    const before = (await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length;
    expect(await refusal(client, 'create_requirement', { provider: 'gpt', title: 'Bad provider' })).toMatch(/provider/);
    expect(await refusal(client, 'create_requirement', { provider: 'codex', title: 'x'.repeat(201) })).toMatch(/title/);
    expect((await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length).toBe(
      before,
    );
    const todo = await call(client, 'create_requirement', { provider: 'codex', title: 'Still todo' });
    expect(await refusal(client, 'confirm', { requirementId: todo.id })).toMatch(/^confirm refused \(409 [a-z_]+\): /);
    expect(await refusal(client, 'get_requirement', { requirementId: 'req_missing' })).toMatch(
      /^get requirement refused \(404 [a-z_]+\): /,
    );
    // Off a board there is no other runner to move from (team mode: docs/team-mode.md).
    expect(await refusal(client, 'move', { requirementId: todo.id })).toMatch(
      /^move refused \(409 not_on_board\): .*--board/,
    );
    expect((await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: todo.id } } }))).status).toBe(
      'todo',
    );
  });

  it('says clearly when no manager runs for the workspace', async () => {
    const other = path.join(path.dirname(sandbox.workspace), 'other-repo');
    fs.mkdirSync(other, { recursive: true });
    const lonely = await connect(sandbox, other);
    try {
      expect((await lonely.listTools()).tools).toHaveLength(OWNER_TOOLS.length);
      const message = await refusal(lonely, 'list_requirements');
      expect(message).toContain(`No Agent Manager is running for workspace ${fs.realpathSync(other)}`);
      expect(message).toContain('agent-manager start --workspace');
    } finally {
      await lonely.close();
    }
  });
});
