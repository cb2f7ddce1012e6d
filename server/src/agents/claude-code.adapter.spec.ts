import * as fs from 'node:fs';

import { TRACE_KINDS } from '@libs/contracts';

import type { InvocationContext, NormalizedEvent } from './agent-adapter';
import {
  Transcript,
  loadTranscript as loadShared,
  messages,
  outcomes,
  parseWith,
  sessions,
  traces,
  transcriptDirectory,
  usages,
} from '../../../test/support/transcripts';
import { ClaudeCodeAdapter } from './claude-code.adapter';

const TRANSCRIPTS = transcriptDirectory('claude');
const loadTranscript = (name: string): Transcript => loadShared('claude', name);
const parseAll = (transcript: Pick<Transcript, 'lines' | 'exit'>): NormalizedEvent[] =>
  parseWith(new ClaudeCodeAdapter(), transcript);

function parseLines(lines: unknown[], exit = { code: 0, signal: null, stderr: '' }): NormalizedEvent[] {
  return parseAll({ exit, lines: lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))) });
}

const retries = (events: NormalizedEvent[]) =>
  traces(events).filter((trace) => trace.nativeType === 'system/api_retry');

function expectApiFailure(events: NormalizedEvent[], prefix: string): void {
  const [outcome] = outcomes(events);
  expect(outcome?.type === 'failed' && outcome.message).toMatch(new RegExp(`^${prefix}`));
  // The synthetic "API Error: …" message is an error trace, never a conversation message.
  expect(messages(events)).toEqual([]);
  expect(traces(events)).toContainEqual(
    expect.objectContaining({
      kind: 'error',
      nativeType: 'assistant/text',
      title: expect.stringMatching(new RegExp(`^${prefix}`)),
    }),
  );
  expect(traces(events).some((trace) => trace.kind === 'assistant_message')).toBe(false);
}

/** What each captured scenario must yield; every transcript in the directory needs an entry. */
const SCENARIOS: Record<string, (events: NormalizedEvent[], transcript: Transcript) => void> = {
  'blocked-sleep-command': (events) => {
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        detail: expect.stringContaining('<tool_use_error>Blocked: sleep 41'),
        kind: 'tool_result',
        status: 'failed',
        title: 'Bash failed',
        toolCallId: 'toolu_sleep_1',
        toolName: 'Bash',
      }),
    );
    expect(messages(events)).toEqual(['done']);
  },
  'error-http400': (events) => {
    expectApiFailure(events, 'API Error: 400 fake bad request');
    expect(retries(events)).toHaveLength(0);
  },
  'error-http500': (events) => {
    expectApiFailure(events, 'API Error: 500 fake internal error');
    expect(retries(events).map((trace) => trace.title)).toEqual(
      Array.from({ length: 10 }, (_, i) => `Retrying request ${i + 1}/10 after HTTP 500 (server_error)`),
    );
    expect(retries(events).every((trace) => trace.kind === 'error')).toBe(true);
  },
  'error-http500-maxretries0': (events) => {
    expectApiFailure(events, 'API Error: 500 fake internal error');
  },
  'error-stream': (events) => {
    expectApiFailure(events, 'API Error: 529 fake overloaded');
    expect(retries(events)).toHaveLength(7);
    expect(retries(events)[0].title).toBe('Retrying request 1/7 after HTTP 529 (overloaded)');
  },
  'error-stream-fallback-ok': (events) => {
    // The failed streams leave no trace on stdout; the fallback's answer arrives once.
    expect(messages(events)).toEqual(['Answer from the non-streaming fallback request.']);
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, costUsd: 0.0008, inputTokens: 400, outputTokens: 23, reasoningOutputTokens: 0 },
    ]);
  },
  'error-stream-maxretries0': (events) => {
    expectApiFailure(events, 'API Error: 529 fake overloaded');
  },
  image: (events) => {
    expect(messages(events)).toEqual(['The image is a solid red square.']);
  },
  'mcp-tool': (events) => {
    // MCP calls are tool traces like Bash, named <server>.<tool> (not mcp__user__echo); a tool error fails its result.
    const tools = traces(events).filter((trace) => trace.kind === 'tool_call' || trace.kind === 'tool_result');
    expect(
      tools.map(({ detail, kind, status, title, toolCallId, toolName }) => ({
        detail,
        kind,
        status,
        title,
        toolCallId,
        toolName,
      })),
    ).toEqual([
      {
        detail: '{"text":"hi"}',
        kind: 'tool_call',
        status: 'started',
        title: 'MCP user.echo',
        toolCallId: 'toolu_1',
        toolName: 'user.echo',
      },
      {
        detail: 'echo: hi',
        kind: 'tool_result',
        status: 'completed',
        title: 'user.echo result',
        toolCallId: 'toolu_1',
        toolName: 'user.echo',
      },
      {
        detail: '{"reason":"out of scope"}',
        kind: 'tool_call',
        status: 'started',
        title: 'MCP user.fail',
        toolCallId: 'toolu_2',
        toolName: 'user.fail',
      },
      {
        detail: 'refused: out of scope',
        kind: 'tool_result',
        status: 'failed',
        title: 'user.fail failed',
        toolCallId: 'toolu_2',
        toolName: 'user.fail',
      },
    ]);
    expect(messages(events)).toEqual(['done']);
  },
  'image-at-mention': (events) => {
    expect(messages(events)).toEqual(['The image is a solid red square.']);
  },
  'image-read-tool': (events) => {
    const tools = traces(events).filter((trace) => trace.toolName !== null);
    expect(tools).toEqual([
      {
        detail: '{"file_path":"/scratch/red8x8.png"}',
        kind: 'tool_call',
        nativeType: 'assistant/tool_use',
        status: 'started',
        title: 'Read: /scratch/red8x8.png',
        toolCallId: 'toolu_read_1',
        toolName: 'Read',
      },
      {
        detail: '[image]',
        kind: 'tool_result',
        nativeType: 'user/tool_result',
        status: 'completed',
        title: 'Read result',
        toolCallId: 'toolu_read_1',
        toolName: 'Read',
      },
    ]);
    expect(messages(events)).toEqual(['The image is a solid red square.']);
  },
  'minimal-sse-probe': (events) => {
    expect(messages(events)).toEqual(['Minimal stream without message_stop.']);
  },
  'plain-text': (events, transcript) => {
    expectNewSession(events, transcript);
    expect(messages(events)).toEqual(['Hello! This is a plain text answer from the fake model.']);
    // The result's total_cost_usd rides along (cumulative on resume: the run subtracts its session's earlier runs).
    // An answer that ends the turn is counted by the result (with the cost), not on its own line.
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, costUsd: 0.0008, inputTokens: 100, outputTokens: 20, reasoningOutputTokens: 0 },
    ]);
    expect(outcomes(events)).toEqual([
      { summary: 'Hello! This is a plain text answer from the fake model.', type: 'completed' },
    ]);
  },
  'plain-text-partial': (events, transcript) => {
    expectNewSession(events, transcript);
    // The stream_event deltas repeat the `assistant` line: the text arrives once.
    expect(messages(events)).toEqual(['Hello! This is a plain text answer from the fake model.']);
    expect(traces(events).some((trace) => trace.nativeType.startsWith('stream_event'))).toBe(false);
    expect(traces(events)).toContainEqual(expect.objectContaining({ kind: 'lifecycle', nativeType: 'system/status' }));
  },
  reasoning: (events) => {
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        detail: 'The user asked for a greeting, so I will answer briefly.',
        kind: 'reasoning',
        nativeType: 'assistant/thinking',
      }),
    );
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        kind: 'lifecycle',
        nativeType: 'system/thinking_tokens',
        title: 'Thinking (about 14 tokens)',
      }),
    );
    expect(messages(events)).toEqual(['Hello after thinking.']);
  },
  resume: (events, transcript) => {
    expectResumedSession(events, transcript);
    expect(messages(events)).toEqual(['Earlier I ran `echo hello > out.txt && cat out.txt` and it printed hello.']);
  },
  'resume-other-cwd': (events, transcript) => {
    expectResumedSession(events, transcript);
    expect(messages(events)).toEqual(['Resumed from another directory.']);
  },
  'shell-tool': (events) => {
    const tools = traces(events).filter((trace) => trace.toolName !== null);
    expect(tools).toEqual([
      {
        detail: '{"command":"echo hello > out.txt && cat out.txt","description":"Write hello to out.txt and print it"}',
        kind: 'tool_call',
        nativeType: 'assistant/tool_use',
        status: 'started',
        title: 'Bash: echo hello > out.txt && cat out.txt',
        toolCallId: 'toolu_shell_1',
        toolName: 'Bash',
      },
      {
        detail: 'hello',
        kind: 'tool_result',
        nativeType: 'user/tool_result',
        status: 'completed',
        title: 'Bash result',
        toolCallId: 'toolu_shell_1',
        toolName: 'Bash',
      },
    ]);
    expect(messages(events)).toEqual(['I ran the command; out.txt contains "hello".']);
    // A running total after each response that calls a tool (the run goes on), then the result's.
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, costUsd: null, inputTokens: 100, outputTokens: 1, reasoningOutputTokens: 0 },
      { cachedInputTokens: 0, costUsd: 0.0016, inputTokens: 200, outputTokens: 40, reasoningOutputTokens: 0 },
    ]);
  },
  'sigterm-long-command': (events) => {
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        detail: 'Exit code 137\nstarted',
        kind: 'tool_result',
        status: 'failed',
        toolName: 'Bash',
      }),
    );
    expect(outcomes(events)).toEqual([
      {
        message:
          'claude exited with code 143 (SIGTERM): [claude-code:unrecognized_model] {"model":"fake","query_source":"sdk"}',
        type: 'failed',
      },
    ]);
  },
  'sigterm-while-streaming': (events) => {
    expect(outcomes(events)).toEqual([
      { message: expect.stringMatching(/^claude exited with code 143 \(SIGTERM\)/), type: 'failed' },
    ]);
  },
};

function expectNewSession(events: NormalizedEvent[], transcript: Transcript): void {
  const id = /--session-id ([0-9a-f-]{36})/.exec(transcript.meta)?.[1];
  expect(id).toBeDefined();
  expect(sessions(events)).toEqual([id]);
}

function expectResumedSession(events: NormalizedEvent[], transcript: Transcript): void {
  const id = /--resume ([0-9a-f-]{36})/.exec(transcript.meta)?.[1];
  expect(id).toBeDefined();
  expect(sessions(events)).toEqual([id]);
}

function baseContext(overrides: Partial<InvocationContext> = {}): InvocationContext {
  return {
    env: { CODE_FACTORY_REQUIREMENT_ID: 'req_1', PATH: '/usr/bin' },
    executable: '/opt/claude/claude',
    images: [],
    instructions: 'Be "careful".\nSecond line.',
    model: null,
    nativeSessionId: null,
    newSessionId: '2f0c6a4e-5b7d-4a1e-9c3f-8d2b1a0e7f65',
    prompt: '### Message 1 from a person\n\nhi\n',
    reasoningEffort: null,
    role: 'rd',
    runningAsRoot: false,
    toolServer: null,
    workspace: '/work/repo',
    ...overrides,
  };
}

const BASE_ARGS = ['--print', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'];
const INSTRUCTIONS_ARGS = ['--append-system-prompt', 'Be "careful".\nSecond line.'];

describe(ClaudeCodeAdapter.name, () => {
  const sut = new ClaudeCodeAdapter();

  describe('transcripts', () => {
    const names = fs
      .readdirSync(TRANSCRIPTS)
      .filter((file) => file.endsWith('.jsonl'))
      .map((file) => file.slice(0, -'.jsonl'.length))
      .sort();

    it('has an expectation for every captured scenario', () => {
      expect(names.length).toBeGreaterThan(0);
      expect(names).toEqual(Object.keys(SCENARIOS).sort());
    });

    describe.each(names)('%s', (name) => {
      const transcript = loadTranscript(name);
      const events = parseAll(transcript);

      it('yields well-formed events and one outcome that agrees with the exit', () => {
        for (const trace of traces(events)) {
          expect(TRACE_KINDS).toContain(trace.kind);
          expect(trace.title.length).toBeGreaterThan(0);
          expect(trace.title.length).toBeLessThanOrEqual(200);
          expect(trace.title).not.toContain('\n');
          expect(trace.nativeType).not.toBe('unparseable');
        }
        const [outcome, ...rest] = outcomes(events);
        expect(rest).toEqual([]);
        expect(outcome?.type).toBe(transcript.exit.code === 0 ? 'completed' : 'failed');
      });

      it('captures the session id from the init line first', () => {
        const init = JSON.parse(transcript.lines[0]) as { session_id: string; subtype: string };
        expect(init.subtype).toBe('init');
        expect(events[0]).toEqual({ nativeSessionId: init.session_id, type: 'session' });
        expect(sessions(events)).toEqual([init.session_id]);
      });

      it('matches the scenario', () => {
        SCENARIOS[name](events, transcript);
      });
    });
  });

  describe('outcomes', () => {
    const init = { session_id: 's1', subtype: 'init', type: 'system' };
    const success = {
      is_error: false,
      num_turns: 1,
      result: 'ok',
      subtype: 'success',
      type: 'result',
      usage: { input_tokens: 5, output_tokens: 2 },
    };

    it('overrules a reported success with a non-zero exit', () => {
      const events = parseLines([init, success], { code: 1, signal: null, stderr: 'crash' });
      expect(outcomes(events)).toEqual([
        { summary: 'ok', type: 'completed' },
        { message: 'claude exited with code 1 after reporting success: crash', type: 'failed' },
      ]);
    });

    it('adds nothing after a success with exit 0 or a reported failure', () => {
      expect(outcomes(parseLines([init, success]))).toEqual([{ summary: 'ok', type: 'completed' }]);
      const failure = { ...success, is_error: true, result: 'API Error: 500 x' };
      expect(outcomes(parseLines([init, failure], { code: 1, signal: null, stderr: '' }))).toEqual([
        { message: 'API Error: 500 x', type: 'failed' },
      ]);
    });

    it('reports error_during_execution with its errors', () => {
      const events = parseLines(
        [
          init,
          {
            errors: ['No conversation found with session ID: abc'],
            is_error: true,
            subtype: 'error_during_execution',
            type: 'result',
          },
        ],
        {
          code: 1,
          signal: null,
          stderr: 'No conversation found with session ID: abc',
        },
      );
      expect(outcomes(events)).toEqual([{ message: 'No conversation found with session ID: abc', type: 'failed' }]);
    });

    it('counts cache reads and writes as input and thinking as reasoning', () => {
      const usage = {
        cache_creation_input_tokens: 30,
        cache_read_input_tokens: 50,
        input_tokens: 20,
        output_tokens: 9,
        output_tokens_details: { thinking_tokens: 4 },
      };
      expect(usages(parseLines([{ ...success, usage }]))).toEqual([
        { cachedInputTokens: 50, costUsd: null, inputTokens: 100, outputTokens: 9, reasoningOutputTokens: 4 },
      ]);
    });

    it("fails the run when Agent Manager's MCP server did not connect (Claude has no `required`), whatever the answer", () => {
      const message = "Agent Manager's MCP server code_factory did not connect (failed): the run had none of its tools";
      for (const status of ['failed', 'needs-auth']) {
        const failedInit = {
          ...init,
          mcp_servers: [
            { name: 'user', status: 'connected' },
            { name: 'code_factory', status },
          ],
        };
        expect(outcomes(parseLines([failedInit, success]))).toEqual([
          { message: message.replace('(failed)', `(${status})`), type: 'failed' },
          { summary: 'ok', type: 'completed' },
        ]);
      }
      // Another server failing, or ours connected: not the run's failure.
      const fine = {
        ...init,
        mcp_servers: [
          { name: 'user', status: 'failed' },
          { name: 'code_factory', status: 'connected' },
        ],
      };
      expect(outcomes(parseLines([fine, success]))).toEqual([{ summary: 'ok', type: 'completed' }]);
    });

    it.each([
      [{ code: null, signal: 'SIGKILL', stderr: '' }, 'claude was killed by SIGKILL'],
      [
        { code: 1, signal: null, stderr: 'Error: Session ID x is already in use.\n' },
        'claude exited with code 1: Error: Session ID x is already in use.',
      ],
      [{ code: 0, signal: null, stderr: '' }, 'claude exited with code 0 without reporting an outcome'],
    ])('reports %j as a failure when no result was printed', (exit, message) => {
      expect(sut.createParser().end(exit)).toEqual([{ message, type: 'failed' }]);
    });
  });

  describe('messages', () => {
    const assistant = (content: unknown[], extra: object = {}) => ({
      message: { content, id: 'msg_1', model: 'claude', role: 'assistant' },
      parent_tool_use_id: null,
      session_id: 's1',
      type: 'assistant',
      ...extra,
    });

    it('emits each text block as a conversation message right away', () => {
      const parser = sut.createParser();
      expect(parser.line(JSON.stringify(assistant([{ text: 'First.', type: 'text' }])))).toContainEqual({
        text: 'First.',
        type: 'assistant_message',
      });
    });

    it('keeps a sub-agent text in the trace only', () => {
      const events = parseLines([
        assistant([{ text: 'Sub-agent found 3 files.', type: 'text' }], { parent_tool_use_id: 'toolu_task_1' }),
      ]);
      expect(messages(events)).toEqual([]);
      expect(traces(events)).toContainEqual(
        expect.objectContaining({
          detail: 'Sub-agent found 3 files.',
          kind: 'assistant_message',
          title: 'Sub-agent message',
        }),
      );
    });

    it('titles tool calls by their main argument and results by the tool', () => {
      const events = parseLines([
        assistant([
          {
            id: 'toolu_1',
            input: { file_path: '/w/a.ts', new_string: 'b', old_string: 'a' },
            name: 'Edit',
            type: 'tool_use',
          },
        ]),
        assistant([{ id: 'toolu_2', input: { pattern: 'TODO\nx' }, name: 'Grep', type: 'tool_use' }]),
        assistant([{ id: 'toolu_3', input: {}, name: 'ToolSearch', type: 'tool_use' }]),
        {
          message: {
            content: [
              {
                content: [{ text: 'edited', type: 'text' }],
                is_error: false,
                tool_use_id: 'toolu_1',
                type: 'tool_result',
              },
              { content: 'nothing', is_error: true, tool_use_id: 'toolu_unknown', type: 'tool_result' },
            ],
            role: 'user',
          },
          type: 'user',
        },
      ]);
      expect(
        traces(events).map(({ detail, status, title, toolName }) => ({ detail, status, title, toolName })),
      ).toEqual([
        {
          detail: '{"file_path":"/w/a.ts","new_string":"b","old_string":"a"}',
          status: 'started',
          title: 'Edit: /w/a.ts',
          toolName: 'Edit',
        },
        { detail: '{"pattern":"TODO\\nx"}', status: 'started', title: 'Grep: TODO x', toolName: 'Grep' },
        { detail: '{}', status: 'started', title: 'ToolSearch', toolName: 'ToolSearch' },
        { detail: 'edited', status: 'completed', title: 'Edit result', toolName: 'Edit' },
        { detail: 'nothing', status: 'failed', title: 'Tool failed', toolName: null },
      ]);
    });
  });

  describe('robustness', () => {
    it.each([
      ['not json'],
      ['{"type":"assistant","message":{"content":[{"type":"text","text":"Hel'],
      ['42'],
      ['[]'],
      ['null'],
      ['"x"'],
    ])('turns %j into an error trace', (line) => {
      expect(sut.createParser().line(line)).toEqual([
        {
          trace: {
            detail: line,
            kind: 'error',
            nativeType: 'unparseable',
            status: null,
            title: 'unparseable output line',
            toolCallId: null,
            toolName: null,
          },
          type: 'trace',
        },
      ]);
    });

    it('ignores blank lines', () => {
      expect(sut.createParser().line('')).toEqual([]);
    });

    it.each([
      [{ type: 'rate_limit_event', rate_limit_info: {} }, 'rate_limit_event'],
      [{ subtype: 'compact_boundary', type: 'system' }, 'system/compact_boundary'],
      [
        { message: { content: [{ id: 'x', type: 'server_tool_use' }] }, type: 'assistant' },
        'assistant/server_tool_use',
      ],
      [{ message: { content: 'plain text prompt' }, type: 'user' }, 'user'],
      [{ no: 'type' }, 'unknown'],
    ])('keeps the unknown %j as lifecycle', (line, nativeType) => {
      const events = sut.createParser().line(JSON.stringify(line));
      expect(events).toHaveLength(1);
      expect(traces(events)[0]).toEqual(expect.objectContaining({ kind: 'lifecycle', nativeType, title: nativeType }));
    });

    it('survives odd field types', () => {
      const parser = sut.createParser();
      for (const line of [
        { message: null, type: 'assistant' },
        { message: { content: [null, 3, { text: 7, type: 'text' }] }, type: 'assistant' },
        { message: { content: [{ content: { odd: true }, type: 'tool_result' }] }, type: 'user' },
        { session_id: 12, subtype: 'init', type: 'system' },
        { is_error: 'yes', result: null, type: 'result', usage: 'none' },
      ]) {
        expect(() => parser.line(JSON.stringify(line))).not.toThrow();
      }
    });
  });

  describe('buildInvocation', () => {
    it("adds the manager's MCP endpoint beside the user's own servers (no --strict-mcp-config), loaded up front, the credential named, not written", () => {
      const toolServer = {
        name: 'code_factory',
        tokenVariable: 'CODE_FACTORY_TOKEN',
        url: 'http://127.0.0.1:4310/api/agent/mcp',
      };
      const args = sut.buildInvocation(
        baseContext({ env: { CODE_FACTORY_TOKEN: 'amr_secret', PATH: '/usr/bin' }, toolServer }),
      ).args;
      const at = args.indexOf('--mcp-config');
      expect(JSON.parse(args[at + 1])).toEqual({
        mcpServers: {
          code_factory: {
            alwaysLoad: true,
            headers: { Authorization: 'Bearer ${CODE_FACTORY_TOKEN}' },
            type: 'http',
            url: 'http://127.0.0.1:4310/api/agent/mcp',
          },
        },
      });
      expect(args.join(' ')).not.toContain('amr_secret');
      // The flag takes several values: another option follows it, never the prompt.
      expect(args[at + 2]).toMatch(/^--/);
      expect(args).not.toContain('--strict-mcp-config');
    });

    it('starts a new session with the id we chose', () => {
      const context = baseContext();
      const invocation = sut.buildInvocation(context);
      expect(invocation).toEqual({
        args: [...BASE_ARGS, '--session-id', '2f0c6a4e-5b7d-4a1e-9c3f-8d2b1a0e7f65', ...INSTRUCTIONS_ARGS],
        command: '/opt/claude/claude',
        env: context.env,
        stdin: context.prompt,
      });
      expect(invocation.env).not.toBe(context.env);
    });

    it('resumes with --resume instead of --session-id', () => {
      expect(
        sut.buildInvocation(baseContext({ nativeSessionId: 'a306b044-9064-4158-810c-5bfe189bf28f' })).args,
      ).toEqual([...BASE_ARGS, '--resume', 'a306b044-9064-4158-810c-5bfe189bf28f', ...INSTRUCTIONS_ARGS]);
    });

    it('passes the model and the effort', () => {
      expect(sut.buildInvocation(baseContext({ model: 'claude-sonnet-4-5', reasoningEffort: 'max' })).args).toEqual([
        ...BASE_ARGS,
        '--session-id',
        '2f0c6a4e-5b7d-4a1e-9c3f-8d2b1a0e7f65',
        '--model',
        'claude-sonnet-4-5',
        '--effort',
        'max',
        ...INSTRUCTIONS_ARGS,
      ]);
    });

    it('runs a reviewer without session persistence', () => {
      expect(sut.buildInvocation(baseContext({ role: 'reviewer' })).args).toEqual([
        ...BASE_ARGS,
        '--session-id',
        '2f0c6a4e-5b7d-4a1e-9c3f-8d2b1a0e7f65',
        '--no-session-persistence',
        ...INSTRUCTIONS_ARGS,
      ]);
    });

    it('sets IS_SANDBOX=1 only when running as root', () => {
      expect(sut.buildInvocation(baseContext({ runningAsRoot: true })).env).toEqual({
        CODE_FACTORY_REQUIREMENT_ID: 'req_1',
        IS_SANDBOX: '1',
        PATH: '/usr/bin',
      });
      expect(sut.buildInvocation(baseContext()).env).not.toHaveProperty('IS_SANDBOX');
    });

    it('leaves images to the prompt (no image flags)', () => {
      const args = sut.buildInvocation(baseContext({ images: ['/data/att_1.png'] })).args;
      expect(args.join(' ')).not.toContain('att_1.png');
    });
  });
});
