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
import { CodexAdapter, displayCommand, tomlString } from './codex.adapter';

const TRANSCRIPTS = transcriptDirectory('codex');
const loadTranscript = (name: string): Transcript => loadShared('codex', name);
const parseAll = (transcript: Pick<Transcript, 'lines' | 'exit'>): NormalizedEvent[] =>
  parseWith(new CodexAdapter(), transcript);

function parseLines(lines: unknown[], exit = { code: 0, signal: null, stderr: '' }): NormalizedEvent[] {
  return parseAll({ exit, lines: lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))) });
}

const HIGH_DEMAND = 'We’re currently experiencing high demand, which may cause temporary errors.';

/** What each captured scenario must yield; every transcript in the directory needs an entry. */
const SCENARIOS: Record<string, (events: NormalizedEvent[], transcript: Transcript) => void> = {
  'error-http400': (events) => {
    expect(outcomes(events)).toEqual([{ message: 'fake bad request: invalid model', type: 'failed' }]);
    expect(messages(events)).toEqual([]);
  },
  'error-http500': (events) => {
    const retries = traces(events).filter(
      (trace) => trace.kind === 'error' && trace.title.startsWith('Reconnecting...'),
    );
    expect(retries.map((trace) => trace.title.slice(0, 18))).toEqual(
      [1, 2, 3, 4, 5].map((n) => `Reconnecting... ${n}/`),
    );
    expect(outcomes(events)).toEqual([{ message: HIGH_DEMAND, type: 'failed' }]);
  },
  'error-http500-noretry': (events) => {
    expect(outcomes(events)).toEqual([{ message: HIGH_DEMAND, type: 'failed' }]);
  },
  'error-stream': (events) => {
    expect(outcomes(events)).toEqual([
      { message: 'stream disconnected before completion: fake stream failure', type: 'failed' },
    ]);
  },
  image: (events) => {
    expect(messages(events)).toEqual(['The image is a solid red square.']);
  },
  'image-variadic-pitfall': (events) => {
    expect(messages(events)).toEqual(['The image is a solid red square.']);
  },
  'mcp-tool': (events) => {
    // MCP calls are tool traces like shell commands, named <server>.<tool>; a tool error fails its result.
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
        toolCallId: 'item_1',
        toolName: 'user.echo',
      },
      {
        detail: 'echo: hi',
        kind: 'tool_result',
        status: 'completed',
        title: 'user.echo result',
        toolCallId: 'item_1',
        toolName: 'user.echo',
      },
      {
        detail: '{"reason":"out of scope"}',
        kind: 'tool_call',
        status: 'started',
        title: 'MCP user.fail',
        toolCallId: 'item_2',
        toolName: 'user.fail',
      },
      {
        detail: 'refused: out of scope',
        kind: 'tool_result',
        status: 'failed',
        title: 'user.fail failed',
        toolCallId: 'item_2',
        toolName: 'user.fail',
      },
    ]);
    expect(outcomes(events)).toEqual([{ summary: 'done', type: 'completed' }]);
  },
  'minimal-sse-probe': (events) => {
    expect(messages(events)).toEqual(['Minimal stream: only output_item.done + completed.']);
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, inputTokens: 0, outputTokens: 0, reasoningOutputTokens: 0 },
    ]);
  },
  'missing-completed-probe': (events) => {
    // The text was printed twice (attempt 1, then its retry) and the turn still failed: it never
    // becomes a conversation message, though both copies stay visible in the trace.
    expect(traces(events).filter((trace) => trace.kind === 'assistant_message')).toHaveLength(2);
    expect(messages(events)).toEqual([]);
    expect(outcomes(events)).toEqual([
      { message: 'stream disconnected before completion: stream closed before response.completed', type: 'failed' },
    ]);
  },
  'plain-text': (events) => {
    expect(messages(events)).toEqual(['Hello! This is a plain text answer from the fake model.']);
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, inputTokens: 100, outputTokens: 20, reasoningOutputTokens: 0 },
    ]);
    expect(outcomes(events)).toEqual([
      { summary: 'Hello! This is a plain text answer from the fake model.', type: 'completed' },
    ]);
    // The model-metadata `item.type=error` is a warning, kept as lifecycle.
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        kind: 'lifecycle',
        nativeType: 'item.completed/error',
        title: expect.stringMatching(/^Warning: Model metadata/),
      }),
    );
  },
  reasoning: (events) => {
    expect(traces(events)).toContainEqual(
      expect.objectContaining({
        detail: '**Planning a greeting**\n\nThe user asked for a greeting, so I will answer briefly.',
        kind: 'reasoning',
        nativeType: 'item.completed/reasoning',
        title: 'Reasoning: Planning a greeting',
      }),
    );
    expect(messages(events)).toEqual(['Hello after thinking.']);
    expect(usages(events)[0]?.reasoningOutputTokens).toBe(7);
  },
  resume: (events, transcript) => {
    expectResumedSession(events, transcript);
    expect(messages(events)).toEqual(['Earlier I ran `echo hello > out.txt && cat out.txt` and it printed hello.']);
    expect(usages(events)).toEqual([
      { cachedInputTokens: 0, inputTokens: 300, outputTokens: 60, reasoningOutputTokens: 0 },
    ]);
  },
  'resume-other-cwd': (events, transcript) => {
    expectResumedSession(events, transcript);
    expect(messages(events)).toEqual(['Resumed from another directory.']);
  },
  'shell-tool': (events) => {
    const tools = traces(events).filter((trace) => trace.toolName !== null);
    expect(tools).toEqual([
      {
        detail: "/bin/bash -lc 'echo hello > out.txt && cat out.txt'",
        kind: 'tool_call',
        nativeType: 'item.started/command_execution',
        status: 'started',
        title: 'Running `echo hello > out.txt && cat out.txt`',
        toolCallId: 'item_1',
        toolName: 'shell',
      },
      {
        detail: 'hello\n',
        kind: 'tool_result',
        nativeType: 'item.completed/command_execution',
        status: 'completed',
        title: 'Ran `echo hello > out.txt && cat out.txt`',
        toolCallId: 'item_1',
        toolName: 'shell',
      },
    ]);
    expect(messages(events)).toEqual(['I ran the command; out.txt contains "hello".']);
  },
  'sigterm-long-command': (events) => {
    expect(traces(events).filter((trace) => trace.kind === 'tool_call')).toHaveLength(1);
    expect(traces(events).filter((trace) => trace.kind === 'tool_result')).toHaveLength(0);
    expect(outcomes(events)).toEqual([{ message: 'codex was killed by SIGTERM', type: 'failed' }]);
  },
  'sigterm-while-streaming': (events) => {
    expect(outcomes(events)).toEqual([{ message: 'codex was killed by SIGTERM', type: 'failed' }]);
  },
};

function expectResumedSession(events: NormalizedEvent[], transcript: Transcript): void {
  const resumed = /resume ([0-9a-f-]{36}) -/.exec(transcript.meta)?.[1];
  expect(resumed).toBeDefined();
  expect(sessions(events)).toEqual([resumed]);
}

function baseContext(overrides: Partial<InvocationContext> = {}): InvocationContext {
  return {
    env: { CODE_FACTORY_REQUIREMENT_ID: 'req_1', PATH: '/usr/bin' },
    executable: '/opt/codex/bin/codex',
    images: [],
    instructions: 'Be "careful".\nUse C:\\tmp.',
    model: null,
    nativeSessionId: null,
    newSessionId: '00000000-0000-4000-8000-000000000000',
    prompt: '### Message 1 from a person\n\nhi\n',
    reasoningEffort: null,
    role: 'rd',
    runningAsRoot: true,
    toolServer: null,
    workspace: '/work/repo',
    ...overrides,
  };
}

const BASE_ARGS = [
  'exec',
  '--json',
  '--color',
  'never',
  '--dangerously-bypass-approvals-and-sandbox',
  '--skip-git-repo-check',
  '-c',
  'allow_login_shell=false',
];
const INSTRUCTIONS_ARGS = ['-c', 'developer_instructions="Be \\"careful\\".\\nUse C:\\\\tmp."'];

describe(CodexAdapter.name, () => {
  const sut = new CodexAdapter();

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
        // Conversation messages are released only together with the success.
        if (messages(events).length > 0) {
          const firstMessage = events.findIndex((event) => event.type === 'assistant_message');
          expect(events.slice(firstMessage).some((event) => event.type === 'completed')).toBe(true);
        }
      });

      it('captures the thread id from the first line', () => {
        const first = JSON.parse(transcript.lines[0]) as { thread_id: string };
        expect(sessions(events)).toEqual([first.thread_id]);
        expect(events[0]).toEqual({ nativeSessionId: first.thread_id, type: 'session' });
      });

      it('matches the scenario', () => {
        SCENARIOS[name](events, transcript);
      });
    });
  });

  describe('retries', () => {
    const start = [{ thread_id: 't1', type: 'thread.started' }, { type: 'turn.started' }];
    const message = (id: string, text: string) => ({
      item: { id, text, type: 'agent_message' },
      type: 'item.completed',
    });
    const retry = { message: 'Reconnecting... 1/5 (stream disconnected before completion)', type: 'error' };
    const completed = {
      type: 'turn.completed',
      usage: { cached_input_tokens: 10, input_tokens: 100, output_tokens: 20, reasoning_output_tokens: 3 },
    };

    it('keeps only the successful attempt of a retried message', () => {
      const events = parseLines([...start, message('item_1', 'Hi.'), retry, message('item_2', 'Hi.'), completed]);
      expect(messages(events)).toEqual(['Hi.']);
      expect(traces(events).filter((trace) => trace.kind === 'assistant_message')).toHaveLength(2);
      expect(traces(events)).toContainEqual(expect.objectContaining({ kind: 'error', title: retry.message }));
    });

    it('releases messages only at turn.completed, before the usage and the outcome', () => {
      const parser = sut.createParser();
      for (const line of [...start, message('item_1', 'Hi.')]) {
        expect(parser.line(JSON.stringify(line)).some((event) => event.type === 'assistant_message')).toBe(false);
      }
      expect(parser.line(JSON.stringify(completed)).filter((event) => event.type !== 'trace')).toEqual([
        { text: 'Hi.', type: 'assistant_message' },
        {
          type: 'usage',
          usage: { cachedInputTokens: 10, inputTokens: 100, outputTokens: 20, reasoningOutputTokens: 3 },
        },
        { summary: 'Hi.', type: 'completed' },
      ]);
      expect(parser.end({ code: 0, signal: null, stderr: '' })).toEqual([]);
    });

    it('keeps messages of attempts that a tool run has confirmed', () => {
      const command = (type: string, extra: object) => ({
        item: { command: "/bin/bash -lc 'npm test'", id: 'item_2', type: 'command_execution', ...extra },
        type,
      });
      const events = parseLines([
        ...start,
        message('item_1', 'Running the tests.'),
        command('item.started', { aggregated_output: '', exit_code: null, status: 'in_progress' }),
        command('item.completed', { aggregated_output: 'FAIL\n', exit_code: 1, status: 'failed' }),
        message('item_3', 'One test fails.'),
        retry,
        message('item_4', 'One test fails.'),
        completed,
      ]);
      expect(messages(events)).toEqual(['Running the tests.', 'One test fails.']);
      expect(traces(events)).toContainEqual(
        expect.objectContaining({
          detail: 'FAIL\n',
          kind: 'tool_result',
          status: 'failed',
          title: 'Ran `npm test` (exit code 1)',
        }),
      );
    });

    it('drops every message of a failed turn', () => {
      const events = parseLines(
        [...start, message('item_1', 'Hi.'), { error: { message: 'boom' }, type: 'turn.failed' }],
        {
          code: 1,
          signal: null,
          stderr: '',
        },
      );
      expect(messages(events)).toEqual([]);
      expect(outcomes(events)).toEqual([{ message: 'boom', type: 'failed' }]);
    });
  });

  describe('robustness', () => {
    it.each([
      ['not json'],
      ['{"type":"thread.started","thread_id":"01a2'],
      ['42'],
      ['[1,2]'],
      ['null'],
      ['"a string"'],
      ['{"type":"item.completed","item":{"id":"item_1"'],
    ])('turns %j into an error trace', (line) => {
      const events = sut.createParser().line(line);
      expect(events).toEqual([
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

    it('caps the detail of a huge garbage line', () => {
      const [event] = sut.createParser().line('x'.repeat(100_000));
      expect(event.type === 'trace' && event.trace.detail!.length).toBeLessThanOrEqual(8 * 1024);
    });

    it('ignores blank lines', () => {
      expect(sut.createParser().line('')).toEqual([]);
      expect(sut.createParser().line('   ')).toEqual([]);
    });

    it.each([
      [{ type: 'turn.paused', reason: 'x' }, 'turn.paused'],
      [{ item: { id: 'item_5', type: 'collab_tool_call' }, type: 'item.completed' }, 'item.completed/collab_tool_call'],
      [{ no: 'type' }, 'unknown'],
      [{ item: null, type: 'item.completed' }, 'item.completed/unknown'],
    ])('keeps the unknown %j as lifecycle', (line, nativeType) => {
      const events = sut.createParser().line(JSON.stringify(line));
      expect(events).toHaveLength(1);
      expect(traces(events)[0]).toEqual(
        expect.objectContaining({ detail: JSON.stringify(line), kind: 'lifecycle', nativeType }),
      );
    });

    it('survives odd field types', () => {
      const parser = sut.createParser();
      expect(() => parser.line('{"type":"thread.started","thread_id":42}')).not.toThrow();
      expect(parser.line('{"type":"thread.started","thread_id":42}').some((event) => event.type === 'session')).toBe(
        false,
      );
      expect(parser.line('{"type":"turn.completed","usage":"lots"}').filter((event) => event.type !== 'trace')).toEqual(
        [{ summary: null, type: 'completed' }],
      );
      expect(parser.line('{"type":"turn.failed","error":null}')).toContainEqual({
        message: 'codex reported a failed turn',
        type: 'failed',
      });
    });

    it('maps other tool items to tool traces', () => {
      const events = parseLines([
        {
          item: {
            changes: [{ kind: 'update', path: 'src/a.ts' }],
            id: 'item_1',
            status: 'completed',
            type: 'file_change',
          },
          type: 'item.completed',
        },
        {
          item: {
            arguments: {},
            id: 'item_2',
            server: 'docs',
            status: 'in_progress',
            tool: 'search',
            type: 'mcp_tool_call',
          },
          type: 'item.started',
        },
        { item: { id: 'item_3', query: 'nestjs sse', type: 'web_search' }, type: 'item.completed' },
        {
          item: {
            id: 'item_4',
            items: [
              { completed: true, text: 'read' },
              { completed: false, text: 'write' },
            ],
            type: 'todo_list',
          },
          type: 'item.updated',
        },
      ]);
      expect(traces(events).map(({ kind, status, title, toolName }) => ({ kind, status, title, toolName }))).toEqual([
        { kind: 'tool_result', status: 'completed', title: 'Edited src/a.ts', toolName: 'apply_patch' },
        { kind: 'tool_call', status: 'started', title: 'MCP docs.search', toolName: 'docs.search' },
        { kind: 'tool_result', status: 'completed', title: 'Web search: nestjs sse', toolName: 'web_search' },
        { kind: 'lifecycle', status: null, title: 'Plan updated', toolName: null },
      ]);
      expect(traces(events)[3].detail).toBe('[x] read\n[ ] write');
    });
  });

  describe('end', () => {
    it.each([
      [{ code: 1, signal: null, stderr: 'Error: boom\n  at x\n' }, 'codex exited with code 1: Error: boom at x'],
      [{ code: null, signal: 'SIGTERM', stderr: '' }, 'codex was killed by SIGTERM'],
      [{ code: 143, signal: null, stderr: '' }, 'codex exited with code 143 (SIGTERM)'],
      [{ code: 0, signal: null, stderr: '' }, 'codex exited with code 0 without reporting an outcome'],
    ])('reports %j as a failure when no outcome was printed', (exit, message) => {
      expect(sut.createParser().end(exit)).toEqual([{ message, type: 'failed' }]);
    });

    it("says plainly that Agent Manager's MCP server could not be initialised (Codex 0.171.0's stderr, as captured)", () => {
      const transport =
        'Transport [codex_rmcp_client::tool_list_changes::ToolListChanges<codex_rmcp_client::event_notification_transport::EventNotificationTransport<rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<codex_rmcp_client::http_client_adapter::StreamableHttpClientAdapter>>>>]';
      const stderr = [
        `Error: thread/start: thread/start failed: error creating thread: Fatal error: Failed to initialize session: required MCP servers failed to initialize: code_factory: handshaking with MCP server failed: Send message error ${transport} error: Client error: HTTP request failed: http/request failed: error sending request for url (http://127.0.0.1:1/api/agent/mcp), when send initialize request (code -32603)`,
        '',
        'Stack backtrace:',
        '   0: <unknown>',
      ].join('\n');
      expect(sut.createParser().end({ code: 1, signal: null, stderr })).toEqual([
        {
          message:
            "Agent Manager's MCP server code_factory could not be initialised, so codex did not start: handshaking with MCP server failed: Send message error transport error: Client error: HTTP request failed: http/request failed: error sending request for url (http://127.0.0.1:1/api/agent/mcp), when send initialize request (code -32603)",
          type: 'failed',
        },
      ]);
      // A user's own required server failing keeps Codex's own words.
      expect(
        sut.createParser().end({ code: 1, signal: null, stderr: stderr.replace('code_factory:', 'user:') }),
      ).toEqual([{ message: expect.stringMatching(/^codex exited with code 1: /), type: 'failed' }]);
    });

    it('keeps the stderr summary short', () => {
      const [event] = sut.createParser().end({ code: 1, signal: null, stderr: 'e'.repeat(10_000) });
      expect(event.type === 'failed' && event.message.length).toBeLessThan(1100);
    });

    it('adds nothing after a printed outcome, unless a success is followed by a non-zero exit', () => {
      const failed = sut.createParser();
      failed.line('{"type":"turn.failed","error":{"message":"x"}}');
      expect(failed.end({ code: 1, signal: null, stderr: '' })).toEqual([]);

      const completed = sut.createParser();
      completed.line('{"type":"turn.completed"}');
      expect(completed.end({ code: 0, signal: null, stderr: '' })).toEqual([]);

      const contradicted = sut.createParser();
      contradicted.line('{"type":"turn.completed"}');
      expect(contradicted.end({ code: 2, signal: null, stderr: 'panic' })).toEqual([
        { message: 'codex exited with code 2 after reporting success: panic', type: 'failed' },
      ]);
    });
  });

  describe('buildInvocation', () => {
    it("adds the manager's MCP endpoint for this run only: one -c key each, the credential named, not written, waited for", () => {
      const toolServer = {
        name: 'code_factory',
        tokenVariable: 'CODE_FACTORY_TOKEN',
        url: 'http://127.0.0.1:4310/api/agent/mcp',
      };
      const args = sut.buildInvocation(
        baseContext({ env: { CODE_FACTORY_TOKEN: 'secret', PATH: '/usr/bin' }, toolServer }),
      ).args;
      expect(args).toEqual([
        ...BASE_ARGS,
        ...INSTRUCTIONS_ARGS,
        '-c',
        'mcp_servers.code_factory.url="http://127.0.0.1:4310/api/agent/mcp"',
        '-c',
        'mcp_servers.code_factory.bearer_token_env_var="CODE_FACTORY_TOKEN"',
        '-c',
        'mcp_servers.code_factory.required=true',
        '-',
      ]);
      expect(args.join(' ')).not.toContain('secret');
    });

    it('starts a new thread', () => {
      const context = baseContext();
      const invocation = sut.buildInvocation(context);
      expect(invocation).toEqual({
        args: [...BASE_ARGS, ...INSTRUCTIONS_ARGS, '-'],
        command: '/opt/codex/bin/codex',
        env: context.env,
        stdin: context.prompt,
      });
      expect(invocation.env).not.toBe(context.env);
    });

    it('resumes a thread with the options before `resume <id> -`', () => {
      expect(
        sut.buildInvocation(baseContext({ nativeSessionId: '01a22967-1158-7f92-9a00-571202ca4bc6' })).args,
      ).toEqual([...BASE_ARGS, ...INSTRUCTIONS_ARGS, 'resume', '01a22967-1158-7f92-9a00-571202ca4bc6', '-']);
    });

    it('passes the model and the reasoning effort', () => {
      expect(sut.buildInvocation(baseContext({ model: 'gpt-5.1-codex', reasoningEffort: 'xhigh' })).args).toEqual([
        ...BASE_ARGS,
        '--model',
        'gpt-5.1-codex',
        '-c',
        'model_reasoning_effort="xhigh"',
        ...INSTRUCTIONS_ARGS,
        '-',
      ]);
    });

    it('attaches images with one `--image=` flag each, never right before `-`', () => {
      const args = sut.buildInvocation(
        baseContext({
          images: ['/data/att_1.png', '/data/with space/att_2.jpg', '/data/a,b.png'],
          nativeSessionId: 'tid',
        }),
      ).args;
      expect(args).toEqual([
        ...BASE_ARGS,
        '--image=/data/att_1.png',
        '--image=/data/with space/att_2.jpg',
        ...INSTRUCTIONS_ARGS,
        'resume',
        'tid',
        '-',
      ]);
      // A comma would split the path into two images; such a path is left to the prompt.
      expect(args.join(' ')).not.toContain('a,b.png');
    });

    it('runs a reviewer without persisting the thread', () => {
      expect(sut.buildInvocation(baseContext({ role: 'reviewer' })).args).toEqual([
        ...BASE_ARGS,
        '--ephemeral',
        ...INSTRUCTIONS_ARGS,
        '-',
      ]);
    });
  });

  describe(tomlString.name, () => {
    it.each([
      ['plain', '"plain"'],
      ['say "hi"', '"say \\"hi\\""'],
      ['C:\\path\\n', '"C:\\\\path\\\\n"'],
      ['line 1\nline 2\r\n', '"line 1\\nline 2\\r\\n"'],
      ['tab\there', '"tab\\there"'],
      ['bell\u0007 esc\u001b del\u007f nul\u0000', '"bell\\u0007 esc\\u001b del\\u007f nul\\u0000"'],
      ['\b\f', '"\\b\\f"'],
      ['漢字 🚀 é', '"漢字 🚀 é"'],
      ["it's '''", "\"it's '''\""],
      ['', '""'],
      ['lone \ud800 surrogate', '"lone \\ufffd surrogate"'],
    ])('encodes %j', (value, encoded) => {
      expect(tomlString(value)).toBe(encoded);
    });

    it('round-trips any well-formed text (its escapes mean the same in JSON)', () => {
      const samples = [
        '',
        'a"b\\c',
        '\n\r\t\b\f',
        Array.from({ length: 0x80 }, (_, i) => String.fromCharCode(i)).join(''),
        '👩‍💻 "quoted" \\n literal',
      ];
      for (const sample of samples) {
        const encoded = tomlString(sample);
        expect(JSON.parse(encoded)).toBe(sample);
        // TOML forbids raw control characters (other than tab) inside a basic string.
        expect(/[\u0000-\u001f\u007f]/.test(encoded)).toBe(false);
      }
    });
  });

  describe(displayCommand.name, () => {
    it.each([
      ["/bin/bash -lc 'echo hello > out.txt && cat out.txt'", 'echo hello > out.txt && cat out.txt'],
      [
        `/bin/bash -lc "echo started; node -e 'setTimeout(()=>{},41000)'; echo finished"`,
        "echo started; node -e 'setTimeout(()=>{},41000)'; echo finished",
      ],
      ["/bin/bash -lc 'echo '\\''quoted'\\'''", "echo 'quoted'"],
      ['/bin/bash -c "echo \\"x\\" \\$HOME"', 'echo "x" $HOME'],
      ["/usr/bin/zsh -lc 'git status'", 'git status'],
      ['npm test', 'npm test'],
    ])('shows %j as %j', (command, shown) => {
      expect(displayCommand(command)).toBe(shown);
    });
  });
});
