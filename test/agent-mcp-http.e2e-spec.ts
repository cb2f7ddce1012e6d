import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';
import type { AgentAdapter, NormalizedEvent } from '@server/agents/agent-adapter';
import { ClaudeCodeAdapter } from '@server/agents/claude-code.adapter';
import { CodexAdapter } from '@server/agents/codex.adapter';

import { apiClient, ok } from './support/api';
import { snapshotStore } from './support/db-snapshot';
import { registerToken } from './support/http';
import { Sandbox, makeSandbox } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { expectRefused } from './support/refusals';

// The run's MCP tools as the manager serves them at /api/agent/mcp (Streamable HTTP, stateless),
// against a real in-process server on a real port: the SDK's own client for what a CLI does, raw
// requests for what a hostile agent could send. Run credentials are issued through the service,
// as run-credentials.e2e-spec.ts does; the real CLIs use the endpoint in mcp-agent-tools.e2e-spec.ts.

jest.setTimeout(60_000);

const JSON_HEADERS = { Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json' };
const INITIALIZE = {
  id: 1,
  jsonrpc: '2.0',
  method: 'initialize',
  params: { capabilities: {}, clientInfo: { name: 'test', version: '1' }, protocolVersion: '2025-06-18' },
};

describe('the run tools served by the manager over MCP (Streamable HTTP)', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let credentials: RunCredentialsService;
  let ownerToken: string;
  let own: { id: string; session: { id: string } };
  let other: { id: string; session: { id: string } };
  const endpoint = () => `${manager.url}/api/agent/mcp`;
  const owner = () => apiClient(manager.url);
  const issue = (runId = `run_${Math.random().toString(16).slice(2)}`) => ({
    runId,
    token: credentials.issue({ requirementId: own.id, runId, sessionId: own.session.id }),
  });

  /** One raw request to the endpoint: the status and the parsed answer (or the text when it is not JSON). */
  async function post(
    body: string,
    headers: Record<string, string>,
    method = 'POST',
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(endpoint(), { body: method === 'POST' ? body : undefined, headers, method });
    const text = await res.text();
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = { text };
    }
    return { json, status: res.status };
  }

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'e2e', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(endpoint()), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  }

  const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    ownerToken = manager.app.get(LocalTokenService).value;
    registerToken(manager.url, ownerToken);
    credentials = manager.app.get(RunCredentialsService);
    own = await ok(owner().POST('/api/requirements', { body: { provider: 'codex', title: 'own' } }));
    other = await ok(owner().POST('/api/requirements', { body: { provider: 'codex', title: 'other' } }));
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('lists the fourteen tools and acts for its own Requirement only, with the run credential', async () => {
    const { token } = issue();
    const client = await connect(token);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(
        [
          'cancel_timer',
          'list_related',
          'list_timers',
          'message_related',
          'preview_output',
          'preview_start',
          'preview_status',
          'propose_requirement',
          'register_pull_request',
          'register_timer',
          'reply_review_comment',
          'requirement_action',
          'requirement_landing',
          'review_comments',
        ].sort(),
      );
      const timer = await client.callTool({
        arguments: { afterSeconds: 60, description: 'Check CI' },
        name: 'register_timer',
      });
      expect(timer.isError).toBeFalsy();
      expect(JSON.parse(text(timer))).toMatchObject({ description: 'Check CI', requirementId: own.id });

      // Another Requirement: neither messaged nor started, and nothing written.
      const before = await snapshotStore(manager.runtime.paths.dataDirectory, { exceptBackground: true });
      const message = await client.callTool({
        arguments: { message: 'psst', requirementId: other.id },
        name: 'message_related',
      });
      expect(message).toMatchObject({ isError: true });
      expect(text(message)).toMatch(/^message refused \(409 not_related\)/);
      const start = await client.callTool({
        arguments: { action: 'start', requirementId: other.id },
        name: 'requirement_action',
      });
      expect(start).toMatchObject({ isError: true });
      expect(text(start)).toMatch(/^start refused \(4\d\d [a-z_]+\)/);
      expect(await snapshotStore(manager.runtime.paths.dataDirectory, { exceptBackground: true })).toEqual(before);

      const related = JSON.parse(text(await client.callTool({ arguments: {}, name: 'list_related' }))) as {
        parent: unknown;
        children: unknown[];
      };
      expect(related).toEqual({ children: [], parent: null });
    } finally {
      await client.close();
    }
    expect(
      (await ok(owner().GET('/api/requirements/{id}/timers', { params: { path: { id: own.id } } }))).items,
    ).toEqual([expect.objectContaining({ description: 'Check CI' })]);
    expect(
      (await ok(owner().GET('/api/requirements/{id}/timers', { params: { path: { id: other.id } } }))).items,
    ).toEqual([]);
    expect((await ok(owner().GET('/api/requirements/{id}', { params: { path: { id: other.id } } }))).status).toBe(
      'todo',
    );
  });

  it('refuses a missing, malformed, unknown or ended credential (401) and the owner’s token (403), before reading the body', async () => {
    const dataDirectory = manager.runtime.paths.dataDirectory;
    const body = JSON.stringify(INITIALIZE);
    const refusedWith = (headers: Record<string, string>) => async () => post(body, { ...JSON_HEADERS, ...headers });
    await expectRefused(dataDirectory, refusedWith({}), 401, 'unauthorized');
    await expectRefused(
      dataDirectory,
      refusedWith({ Authorization: 'Bearer ${CODE_FACTORY_TOKEN}' }),
      401,
      'malformed_authorization',
    );
    await expectRefused(
      dataDirectory,
      refusedWith({ Authorization: `Bearer amr_${'0'.repeat(64)}` }),
      401,
      'run_credential_invalid',
    );
    const { runId, token } = issue();
    expect((await post(body, { ...JSON_HEADERS, Authorization: `Bearer ${token}` })).status).toBe(200);
    credentials.revoke(runId);
    await expectRefused(
      dataDirectory,
      refusedWith({ Authorization: `Bearer ${token}` }),
      401,
      'run_credential_invalid',
    );
    // The owner may call the agent API for any Requirement, but the tools act for a run's own.
    await expectRefused(
      dataDirectory,
      refusedWith({ Authorization: `Bearer ${ownerToken}` }),
      403,
      'agent_credential_required',
    );
  });

  it('stops a connected client’s tools when its run ends', async () => {
    const { runId, token } = issue();
    const client = await connect(token);
    try {
      expect((await client.callTool({ arguments: {}, name: 'list_timers' })).isError).toBeFalsy();
      credentials.revoke(runId);
      await expect(client.callTool({ arguments: {}, name: 'list_timers' })).rejects.toThrow(/401/);
    } finally {
      await client.close();
    }
  });

  it('answers malformed or oversized requests with a 4xx and writes nothing', async () => {
    const { token } = issue();
    const auth = { ...JSON_HEADERS, Authorization: `Bearer ${token}` };
    const before = await snapshotStore(manager.runtime.paths.dataDirectory, { exceptBackground: true });
    const cases: Array<[string, Record<string, string>, number]> = [
      ['{"jsonrpc": "2.0", "id": 1, "method": ', auth, 400], // not JSON
      ['[]', auth, 400], // a batch
      [JSON.stringify([INITIALIZE, INITIALIZE]), auth, 400],
      ['"initialize"', auth, 400], // not an object
      ['null', auth, 400],
      ['{"hello": "world"}', auth, 400], // not JSON-RPC
      ['{"jsonrpc": "2.0", "id": {"deep": [1]}, "method": "tools/list"}', auth, 400],
      [
        JSON.stringify({ ...INITIALIZE, params: { nested: JSON.parse('['.repeat(200) + ']'.repeat(200)) as unknown } }),
        auth,
        400,
      ], // deeper than the shape limits
      [JSON.stringify({ ...INITIALIZE, params: { blob: 'x'.repeat(1_100_000) } }), auth, 400], // over the body limit
      [JSON.stringify(INITIALIZE), { ...auth, 'Content-Type': 'text/plain' }, 415],
      [JSON.stringify(INITIALIZE), { ...auth, Accept: 'text/html' }, 406],
    ];
    for (const [body, headers, status] of cases) {
      const res = await post(body, headers);
      expect({ body: body.slice(0, 80), status: res.status }).toEqual({ body: body.slice(0, 80), status });
    }
    // A tool that does not exist, or arguments outside the schema: a JSON-RPC answer, not a 500.
    const client = await connect(token);
    try {
      await expect(client.callTool({ arguments: {}, name: 'drop_database' })).resolves.toMatchObject({ isError: true });
      await expect(
        client.callTool({ arguments: { afterSeconds: 'soon', description: 5 }, name: 'register_timer' }),
      ).resolves.toMatchObject({ isError: true });
    } finally {
      await client.close();
    }
    // No server-sent stream and no session to end: 405 for GET and DELETE.
    expect((await post('', { Accept: 'text/event-stream', Authorization: `Bearer ${token}` }, 'GET')).status).toBe(405);
    expect((await post('', { Authorization: `Bearer ${token}` }, 'DELETE')).status).toBe(405);
    expect(await snapshotStore(manager.runtime.paths.dataDirectory, { exceptBackground: true })).toEqual(before);
  });
});

// What each pinned CLI does when the endpoint cannot be reached at start, read through the run's
// own adapter (its options) and parser (its outcome): the run fails and says why, instead of
// going on without its tools. Codex: `required = true`; Claude Code, which has no such option,
// lists the server as failed in its init line, and the parser makes that the run's failure.
describe.each(REAL_AGENT_CLIS)('a run whose MCP endpoint cannot be reached, with the real $provider CLI', (cli) => {
  it('fails, naming the server', async () => {
    const stub = await ModelStub.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-unreachable-'));
    try {
      fs.mkdirSync(path.join(dir, 'cli'));
      const adapter: AgentAdapter = cli.provider === 'codex' ? new CodexAdapter() : new ClaudeCodeAdapter();
      const invocation = adapter.buildInvocation({
        env: {
          ...(process.env as Record<string, string>),
          ...cli.env(stub, path.join(dir, 'cli')),
          CODE_FACTORY_TOKEN: `amr_${'1'.repeat(64)}`,
        },
        executable: cli.executable,
        images: [],
        instructions: 'Answer briefly.',
        model: null,
        nativeSessionId: null,
        newSessionId: '2f0c6a4e-5b7d-4a1e-9c3f-8d2b1a0e7f65',
        prompt: 'Hello',
        reasoningEffort: null,
        role: 'rd',
        runningAsRoot: process.getuid?.() === 0,
        // Port 1: nothing listens there.
        toolServer: {
          name: 'code_factory',
          tokenVariable: 'CODE_FACTORY_TOKEN',
          url: 'http://127.0.0.1:1/api/agent/mcp',
        },
        workspace: dir,
      });
      const parser = adapter.createParser();
      const events: NormalizedEvent[] = [];
      const child = spawn(invocation.command, invocation.args, { cwd: dir, env: invocation.env });
      child.stdin.end(invocation.stdin);
      let buffered = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        lines.filter((line) => line.trim()).forEach((line) => events.push(...parser.line(line)));
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
        child.on('close', (c, s) => resolve([c, s])),
      );
      events.push(...parser.end({ code, signal, stderr: stderr.slice(-4000) }));
      const failures = events.filter(
        (event): event is Extract<NormalizedEvent, { type: 'failed' }> => event.type === 'failed',
      );
      expect(failures.map((event) => event.message).join('\n')).toMatch(
        cli.provider === 'codex'
          ? /^Agent Manager's MCP server code_factory could not be initialised, so codex did not start: .*127\.0\.0\.1:1/
          : /MCP server code_factory did not connect \(failed\)/,
      );
    } finally {
      await stub.close();
      fs.rmSync(dir, { force: true, recursive: true });
    }
  });
});
