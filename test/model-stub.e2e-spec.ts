// Proves test/support/model-stub.ts against the REAL, pinned agent CLIs (test/agent-clis), run directly:
// child_process.spawn without a shell, a clean environment (PATH + the stub's variables), cwd = a fresh
// directory, the prompt on stdin.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ModelStub, claudeEnvironment, codexEnvironment } from './support/model-stub';
import type { Json } from './support/http';

const BIN = path.join(__dirname, 'agent-clis', 'node_modules', '.bin');
const CODEX = path.join(BIN, 'codex');
const CLAUDE = path.join(BIN, 'claude');
const CODEX_FLAGS = [
  'exec',
  '--json',
  '--color',
  'never',
  '--dangerously-bypass-approvals-and-sandbox',
  '--skip-git-repo-check',
];
const CLAUDE_FLAGS = ['--print', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'];

// Codex warns on stderr when CODEX_HOME is under /tmp; /var/tmp keeps stderr clean.
const TMP = fs.existsSync('/var/tmp') ? '/var/tmp' : os.tmpdir();

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  lines: Json[];
  ms: number;
}

function run(
  command: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string>; stdin: string },
): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 50_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line));
      resolve({ code, lines, ms: Date.now() - started, signal, stderr, stdout });
    });
    child.stdin.end(opts.stdin);
  });
}

interface Sandbox {
  cwd: string;
  envDir: string;
  cleanup(): void;
}

function makeSandbox(): Sandbox {
  const base = fs.mkdtempSync(path.join(TMP, 'model-stub-e2e-'));
  const cwd = path.join(base, 'ws');
  const envDir = path.join(base, 'env');
  fs.mkdirSync(cwd);
  fs.mkdirSync(envDir);
  return { cleanup: () => fs.rmSync(base, { force: true, recursive: true }), cwd, envDir };
}

const timings: string[] = [];
afterAll(() => {
  if (process.env.MODEL_STUB_TIMINGS) {
    console.log(timings.join('\n'));
  }
});

describe('model stub', () => {
  let stub: ModelStub;
  let sandbox: Sandbox;

  beforeEach(async () => {
    stub = await ModelStub.start();
    sandbox = makeSandbox();
  });
  afterEach(async () => {
    await stub.close();
    sandbox.cleanup();
  });

  describe('with Codex (OpenAI Responses API)', () => {
    let env: Record<string, string>;
    beforeEach(() => {
      env = codexEnvironment(stub, sandbox.envDir);
    });

    const codex = async (
      stdin: string,
      extra: string[] = ['-'],
      name = expect.getState().currentTestName,
    ): Promise<Run> => {
      const result = await run(CODEX, [...CODEX_FLAGS, ...extra], { cwd: sandbox.cwd, env, stdin });
      timings.push(`${name}: ${result.ms} ms`);
      return result;
    };
    const items = (r: Run, type: string): Json[] =>
      r.lines.filter((l) => l.type === 'item.completed' && l.item.type === type).map((l) => l.item);

    it('answers a plain text turn; config.toml alone selects the provider and the model', async () => {
      stub.script([{ text: 'Hello from the stub.' }]);
      const r = await codex('say hi\n');
      expect(r.code).toBe(0);
      expect(items(r, 'agent_message').map((i) => i.text)).toEqual(['Hello from the stub.']);
      expect(r.lines.at(-1)).toMatchObject({ type: 'turn.completed', usage: { input_tokens: 100, output_tokens: 20 } });
      expect(r.stderr).toBe('');
      expect(stub.requests).toHaveLength(1);
      expect(stub.requests[0]).toMatchObject({ api: 'openai', prompt: 'say hi\n', stream: true, url: '/v1/responses' });
      expect(stub.requests[0].body.model).toBe('fake-model');
      expect(stub.requests[0].headers.authorization).toBe('Bearer fake-key');
      expect(stub.requests[0].transcript).toBe('user: say hi\n');
      expect(stub.unhandled).toEqual([]);
    });

    it('runs a shell command and sends its output back', async () => {
      stub.script([{ shell: 'echo hello > out.txt && cat out.txt' }, { text: 'The file says hello.' }]);
      const r = await codex('create out.txt\n');
      expect(r.code).toBe(0);
      expect(fs.readFileSync(path.join(sandbox.cwd, 'out.txt'), 'utf8')).toBe('hello\n');
      expect(items(r, 'command_execution')).toEqual([
        expect.objectContaining({ aggregated_output: 'hello\n', exit_code: 0, status: 'completed' }),
      ]);
      expect(items(r, 'agent_message').map((i) => i.text)).toEqual(['The file says hello.']);
      expect(r.lines.at(-1).type).toBe('turn.completed');
      expect(stub.requests).toHaveLength(2);
      const input = stub.requests[1].body.input;
      expect(input.at(-1)).toMatchObject({
        type: 'function_call_output',
        output: expect.stringContaining('Output:\nhello\n'),
      });
      expect(stub.requests[1].transcript).toContain(
        'tool_call: exec_command {"cmd":"echo hello > out.txt && cat out.txt"}',
      );
      expect(stub.requests[1].transcript).toMatch(/tool_result: [\s\S]*Output:\nhello/);
      expect(stub.requests[1].prompt).toBe('create out.txt\n');
    });

    it('shows reasoning', async () => {
      stub.script([{ reasoning: '**Planning**\n\nI will greet.', text: 'Hi after thinking.' }]);
      const r = await codex('think, then say hi\n');
      expect(r.code).toBe(0);
      expect(items(r, 'reasoning').map((i) => i.text)).toEqual(['**Planning**\n\nI will greet.']);
      expect(items(r, 'agent_message').map((i) => i.text)).toEqual(['Hi after thinking.']);
      expect(r.lines.at(-1)).toMatchObject({ type: 'turn.completed', usage: { reasoning_output_tokens: 7 } });
    });

    it('resumes a thread: the second request carries the first turn', async () => {
      stub.script([{ text: 'First answer: ALPHA.' }, { text: 'Second answer.' }]);
      const first = await codex('remember ALPHA\n');
      expect(first.code).toBe(0);
      const threadId = first.lines[0].thread_id;
      expect(first.lines[0].type).toBe('thread.started');

      const second = await codex('what did you say?\n', ['resume', threadId, '-']);
      expect(second.code).toBe(0);
      expect(second.lines[0]).toEqual({ thread_id: threadId, type: 'thread.started' });
      expect(items(second, 'agent_message').map((i) => i.text)).toEqual(['Second answer.']);
      expect(stub.requests).toHaveLength(2);
      expect(stub.requests[1].transcript).toBe(
        'user: remember ALPHA\n\nassistant: First answer: ALPHA.\nuser: what did you say?\n',
      );
    });

    it('fails the turn on an HTTP error', async () => {
      stub.script([{ error: { message: 'stub bad request', status: 400 } }]);
      const r = await codex('say hi\n');
      expect(r.code).toBe(1);
      expect(r.lines.at(-1)).toEqual({ error: { message: 'stub bad request' }, type: 'turn.failed' });
      expect(stub.requests).toHaveLength(1);
    });

    it('fails after one request on a 500 (no retries)', async () => {
      stub.script([{ error: { message: 'stub internal error', status: 500 } }]);
      const r = await codex('say hi\n');
      expect(r.code).toBe(1);
      expect(r.lines.at(-1).type).toBe('turn.failed');
      expect(stub.requests).toHaveLength(1);
    });
  });

  describe('with Claude Code (Anthropic Messages API)', () => {
    let env: Record<string, string>;
    beforeEach(() => {
      env = claudeEnvironment(stub, sandbox.envDir);
    });

    const claude = async (stdin: string, extra: string[], name = expect.getState().currentTestName): Promise<Run> => {
      const result = await run(CLAUDE, [...CLAUDE_FLAGS, ...extra], { cwd: sandbox.cwd, env, stdin });
      timings.push(`${name}: ${result.ms} ms`);
      return result;
    };
    const blocks = (r: Run, type: string): Json[] =>
      r.lines
        .filter((l) => l.type === 'assistant')
        .flatMap((l) => l.message.content)
        .filter((b: Json) => b.type === type);
    const result = (r: Run): Json => r.lines.find((l) => l.type === 'result');

    it('answers a plain text turn without --model (ANTHROPIC_MODEL)', async () => {
      stub.script([{ text: 'Hello from the stub.' }]);
      const sessionId = randomUUID();
      const r = await claude('say hi\n', ['--session-id', sessionId]);
      expect(r.code).toBe(0);
      expect(r.lines[0]).toMatchObject({ model: 'fake', session_id: sessionId, subtype: 'init', type: 'system' });
      expect(blocks(r, 'text').map((b) => b.text)).toEqual(['Hello from the stub.']);
      expect(result(r)).toMatchObject({ is_error: false, result: 'Hello from the stub.', session_id: sessionId });
      expect(stub.requests).toHaveLength(1);
      expect(stub.requests[0]).toMatchObject({ api: 'anthropic', prompt: 'say hi\n', stream: true });
      expect(stub.requests[0].url).toBe('/v1/messages?beta=true');
      expect(stub.requests[0].body.model).toBe('fake');
      expect(stub.requests[0].headers['x-api-key']).toBe('sk-fake');
      expect(stub.requests[0].transcript).toBe('user: say hi\n');
      expect(stub.unhandled).toEqual([]);
    });

    it('runs a shell command and sends its output back', async () => {
      stub.script([
        { shell: 'echo hello > out.txt && cat out.txt', text: 'Running it.' },
        { text: 'The file says hello.' },
      ]);
      const r = await claude('create out.txt\n', ['--session-id', randomUUID()]);
      expect(r.code).toBe(0);
      expect(fs.readFileSync(path.join(sandbox.cwd, 'out.txt'), 'utf8')).toBe('hello\n');
      expect(blocks(r, 'tool_use')).toEqual([
        expect.objectContaining({
          input: expect.objectContaining({ command: 'echo hello > out.txt && cat out.txt' }),
          name: 'Bash',
        }),
      ]);
      const toolResults = r.lines
        .filter((l) => l.type === 'user')
        .flatMap((l) => l.message.content)
        .filter((b: Json) => b.type === 'tool_result');
      expect(toolResults).toEqual([expect.objectContaining({ content: 'hello', is_error: false })]);
      expect(result(r)).toMatchObject({ is_error: false, num_turns: 2, result: 'The file says hello.' });
      expect(stub.requests).toHaveLength(2);
      expect(stub.requests[1].body.messages.at(-1)).toMatchObject({
        content: [expect.objectContaining({ content: 'hello', type: 'tool_result' })],
        role: 'user',
      });
      expect(stub.requests[1].transcript).toContain('tool_result: hello');
      expect(stub.requests[1].prompt).toBe('create out.txt\n');
    });

    it('shows thinking', async () => {
      stub.script([{ reasoning: 'I will greet.', text: 'Hi after thinking.' }]);
      const r = await claude('think, then say hi\n', ['--session-id', randomUUID()]);
      expect(r.code).toBe(0);
      expect(blocks(r, 'thinking')).toEqual([expect.objectContaining({ thinking: 'I will greet.' })]);
      expect(blocks(r, 'text').map((b) => b.text)).toEqual(['Hi after thinking.']);
      expect(result(r)).toMatchObject({ is_error: false, result: 'Hi after thinking.' });
    });

    it('resumes a session: the second request carries the first turn', async () => {
      stub.script([{ text: 'First answer: ALPHA.' }, { text: 'Second answer.' }]);
      const sessionId = randomUUID();
      const first = await claude('remember ALPHA\n', ['--session-id', sessionId]);
      expect(first.code).toBe(0);
      const second = await claude('what did you say?\n', ['--resume', sessionId]);
      expect(second.code).toBe(0);
      expect(result(second)).toMatchObject({ is_error: false, result: 'Second answer.', session_id: sessionId });
      expect(stub.requests).toHaveLength(2);
      expect(stub.requests[1].transcript).toBe(
        'user: remember ALPHA\n\nassistant: First answer: ALPHA.\nuser: what did you say?\n',
      );
    });

    it('ends with is_error on an HTTP 500 (one request, no retries)', async () => {
      stub.script([{ error: { message: 'stub internal error', status: 500 } }]);
      const r = await claude('say hi\n', ['--session-id', randomUUID()]);
      expect(r.code).toBe(1);
      expect(result(r)).toMatchObject({ api_error_status: 500, is_error: true, terminal_reason: 'api_error' });
      expect(result(r).result).toContain('API Error: 500 stub internal error');
      expect(stub.requests).toHaveLength(1);
    });

    it('ends with is_error on an HTTP 400 that sticks through the re-sends', async () => {
      stub.script([{ error: { message: 'stub bad request', status: 400 }, times: Infinity }]);
      const r = await claude('say hi\n', ['--session-id', randomUUID()]);
      expect(r.code).toBe(1);
      expect(result(r)).toMatchObject({ api_error_status: 400, is_error: true });
      expect(result(r).result).toContain('stub bad request');
      timings.push(`claude 400 requests: ${stub.requests.length}`);
    });
  });

  it('routes concurrent Codex and Claude runs by marker on one stub', async () => {
    stub.scriptFor('[codex-job]', [{ shell: 'echo from-codex > codex.txt' }, { text: 'codex done' }]);
    stub.scriptFor('[claude-job]', [{ shell: 'echo from-claude > claude.txt' }, { text: 'claude done' }]);
    const codexDir = path.join(sandbox.envDir, 'codex');
    const claudeDir = path.join(sandbox.envDir, 'claude');
    fs.mkdirSync(codexDir);
    fs.mkdirSync(claudeDir);
    const [c, a] = await Promise.all([
      run(CODEX, [...CODEX_FLAGS, '-'], {
        cwd: sandbox.cwd,
        env: codexEnvironment(stub, codexDir),
        stdin: 'do the [codex-job]\n',
      }),
      run(CLAUDE, [...CLAUDE_FLAGS, '--session-id', randomUUID()], {
        cwd: sandbox.cwd,
        env: claudeEnvironment(stub, claudeDir),
        stdin: 'do the [claude-job]\n',
      }),
    ]);
    timings.push(`concurrent: codex ${c.ms} ms, claude ${a.ms} ms`);
    expect(c.code).toBe(0);
    expect(a.code).toBe(0);
    expect(c.lines.filter((l) => l.item?.type === 'agent_message').map((l) => l.item.text)).toEqual(['codex done']);
    expect(a.lines.find((l) => l.type === 'result')).toMatchObject({ is_error: false, result: 'claude done' });
    expect(fs.readFileSync(path.join(sandbox.cwd, 'codex.txt'), 'utf8')).toBe('from-codex\n');
    expect(fs.readFileSync(path.join(sandbox.cwd, 'claude.txt'), 'utf8')).toBe('from-claude\n');
    expect(stub.requests.map((r) => `${r.api}:${r.marker}`).sort()).toEqual([
      'anthropic:[claude-job]',
      'anthropic:[claude-job]',
      'openai:[codex-job]',
      'openai:[codex-job]',
    ]);
  });

  describe('protocol details (plain HTTP)', () => {
    const post = (url: string, body: object): Promise<Response> =>
      fetch(`${stub.url}${url}`, {
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
        method: 'POST',
      });
    const anthropicBody = (text: string, stream: boolean): object => ({
      messages: [{ content: [{ text, type: 'text' }], role: 'user' }],
      model: 'fake',
      stream,
    });

    it('calls an offered tool by name, records the tools offered, and fails loudly on one not offered', async () => {
      const tools = [
        { input_schema: { type: 'object' }, name: 'Bash' },
        { input_schema: { type: 'object' }, name: 'mcp__code_factory__list_timers' },
      ];
      stub.script([
        { arguments: { a: 1 }, tool: 'list_timers' },
        { arguments: (request) => ({ offered: request.tools.length }), tool: 'mcp__code_factory__list_timers' },
        { arguments: {}, tool: 'cancel_timer' },
      ]);
      const first = await (await post('/v1/messages', { ...anthropicBody('hi', false), tools })).json();
      expect(first).toMatchObject({
        content: [{ input: { a: 1 }, name: 'mcp__code_factory__list_timers', type: 'tool_use' }],
        stop_reason: 'tool_use',
      });
      const second = (await (await post('/v1/messages', { ...anthropicBody('hi', false), tools })).json()) as Json;
      expect(second.content[0].input).toEqual({ offered: 2 });
      const missing = await post('/v1/messages', { ...anthropicBody('hi', false), tools });
      expect(missing.status).toBe(400);
      expect(((await missing.json()) as Json).error.message).toContain(
        'the scripted tool cancel_timer was not offered',
      );
      expect(stub.requests[0].tools).toEqual(['Bash', 'mcp__code_factory__list_timers']);

      // Codex: a namespace member is called by its name with the namespace beside it.
      stub.script([{ arguments: {}, tool: 'list_timers' }]);
      const namespace = {
        name: 'mcp__code_factory',
        tools: [{ name: 'list_timers', type: 'function' }],
        type: 'namespace',
      };
      const sse = await (
        await post('/v1/responses', {
          input: 'hi',
          model: 'fake-model',
          tools: [{ name: 'exec_command', type: 'function' }, namespace],
        })
      ).text();
      expect(sse).toContain('"name":"list_timers","namespace":"mcp__code_factory"');
      expect(stub.requests.at(-1)!.tools).toEqual(['exec_command', 'mcp__code_factory.list_timers']);
    });

    it('answers "OK" when nothing is scripted, and non-streaming Messages requests with JSON', async () => {
      const res = await post('/v1/messages?beta=true', anthropicBody('hi', false));
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        content: [{ text: 'OK', type: 'text' }],
        role: 'assistant',
        stop_reason: 'end_turn',
        type: 'message',
      });
      stub.script([{ shell: 'ls' }]);
      const tool = await (await post('/v1/messages', anthropicBody('hi', false))).json();
      expect(tool).toMatchObject({
        content: [{ input: { command: 'ls' }, name: 'Bash', type: 'tool_use' }],
        stop_reason: 'tool_use',
      });
      expect(stub.requests.map((r) => r.stream)).toEqual([false, false]);
    });

    it('answers unknown paths with 404 and records them', async () => {
      // (GET /v1/models is answered: the model catalog lists models through it.)
      const res = await fetch(`${stub.url}/v1/no-such-endpoint`);
      expect(res.status).toBe(404);
      expect(stub.unhandled).toEqual([{ method: 'GET', url: '/v1/no-such-endpoint' }]);
      expect(stub.requests).toEqual([]);
    });

    it('delays, hangs until closed, and waits for requests', async () => {
      stub.script([{ delayMs: 300, then: { text: 'late' } }, { hang: true }]);
      const started = Date.now();
      const late = await post('/v1/messages', anthropicBody('one', false));
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(((await late.json()) as Json).content[0].text).toBe('late');

      const hanging = post('/v1/messages', anthropicBody('two', false)).then(
        () => 'answered',
        () => 'failed',
      );
      await stub.waitForRequests(2);
      const outcome = await Promise.race([hanging, new Promise((r) => setTimeout(() => r('still waiting'), 200))]);
      expect(outcome).toBe('still waiting');
      await stub.close();
      expect(await hanging).toBe('failed');
    });

    it('routes tool round-trips to the marker of the prompt that started them', async () => {
      stub.scriptFor('M1', [{ shell: 'true' }, { text: 'm1 done' }]);
      stub.script([{ text: 'default' }]);
      const convo = [
        { content: 'please M1', role: 'user' },
        { content: [{ id: 't1', input: { command: 'true' }, name: 'Bash', type: 'tool_use' }], role: 'assistant' },
        { content: [{ content: '', tool_use_id: 't1', type: 'tool_result' }], role: 'user' },
      ];
      await (await post('/v1/messages', { messages: convo.slice(0, 1), model: 'fake', stream: false })).json();
      const second: Json = await (await post('/v1/messages', { messages: convo, model: 'fake', stream: false })).json();
      const third: Json = await (await post('/v1/messages', anthropicBody('no marker', false))).json();
      expect(second.content[0].text).toBe('m1 done');
      expect(third.content[0].text).toBe('default');
      expect(stub.requests.map((r) => r.marker)).toEqual(['M1', 'M1', null]);
      expect(stub.requests[1].transcript).toBe('user: please M1\ntool_call: Bash {"command":"true"}\ntool_result: ');
    });
  });
});
