import {
  AGENT_TOOL_SERVER_NAME,
  AgentAdapter,
  AgentToolServer,
  Invocation,
  InvocationContext,
  NormalizedEvent,
  OutputParser,
  TokenUsage,
} from './agent-adapter';
import {
  exitMessage,
  isObject,
  Json,
  mcpToolName,
  num,
  oneLine,
  parseJsonLine,
  str,
  trace,
  unknown,
} from './output-helpers';

// Claude Code (`claude --print --output-format stream-json --verbose`). Verified against Claude
// Code 2.1.332 transcripts in test/fixtures/agent-transcripts/claude/.

/**
 * The `--mcp-config` JSON for this run's tool server: the manager's Streamable HTTP endpoint, with
 * the run credential as `${CODE_FACTORY_TOKEN}`, which Claude Code expands from its own environment
 * when it connects, so the token itself is never on the command line. `alwaysLoad` puts its tools
 * in every request instead of behind ToolSearch (Claude defers MCP tools by default, and the model
 * would first have to find them); in the bypassPermissions mode the runs use, they need no
 * separate permission.
 */
export function claudeToolServerConfig(server: AgentToolServer): string {
  const config = {
    alwaysLoad: true,
    headers: { Authorization: `Bearer \${${server.tokenVariable}}` },
    type: 'http',
    url: server.url,
  };
  return JSON.stringify({ mcpServers: { [server.name]: config } });
}

export class ClaudeCodeAdapter implements AgentAdapter {
  readonly provider = 'claude-code' as const;

  buildInvocation(context: InvocationContext): Invocation {
    const args = ['--print', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'];
    // `--resume` keeps the session id (checked in 2.1.332, also from another cwd); a new session gets
    // the id we chose, so it is known before the first line is printed.
    if (context.nativeSessionId) {
      args.push('--resume', context.nativeSessionId);
    } else {
      args.push('--session-id', context.newSessionId);
    }
    if (context.role === 'reviewer') {
      args.push('--no-session-persistence');
    }
    if (context.model) {
      args.push('--model', context.model);
    }
    if (context.reasoningEffort) {
      args.push('--effort', context.reasoningEffort);
    }
    if (context.toolServer) {
      // Added to the user's own servers (no --strict-mcp-config). The flag takes several values:
      // always followed by another option here, never by the prompt.
      args.push('--mcp-config', claudeToolServerConfig(context.toolServer));
    }
    args.push('--append-system-prompt', context.instructions);
    // As root, `--dangerously-skip-permissions` is refused unless IS_SANDBOX=1.
    const env = context.runningAsRoot ? { ...context.env, IS_SANDBOX: '1' } : { ...context.env };
    return { args, command: context.executable, env, stdin: context.prompt };
  }

  createParser(): OutputParser {
    return new ClaudeOutputParser();
  }
}

class ClaudeOutputParser implements OutputParser {
  private outcomeReported = false;
  private succeeded = false;
  private sessionId: string | null = null;
  /** Tool names by tool_use id, to title the results. */
  private readonly toolNames = new Map<string, string>();
  /**
   * Each model response's usage, by message id: Claude Code prints one `assistant` line per content
   * block, each with its response's usage, so the run's running total sums responses, not lines.
   */
  private readonly responseUsage = new Map<string, TokenUsage>();

  line(text: string): NormalizedEvent[] {
    return parseJsonLine(text, (value) => this.event(value));
  }

  end(exit: { code: number | null; signal: string | null; stderr: string }): NormalizedEvent[] {
    // `result` is missing after SIGTERM (exit 143); a reported success is overruled by a non-zero exit.
    if (this.outcomeReported && (!this.succeeded || exit.code === null || exit.code === 0)) {
      return [];
    }
    return [{ message: exitMessage('claude', exit, this.succeeded), type: 'failed' }];
  }

  private event(event: Json): NormalizedEvent[] {
    const type = str(event.type) ?? 'unknown';
    switch (type) {
      case 'system':
        return this.system(event);
      case 'assistant':
        return this.assistant(event);
      case 'user':
        return this.user(event);
      case 'result':
        return this.result(event);
      case 'stream_event':
        // Only with --include-partial-messages (not used): SSE deltas of what the next `assistant`
        // line carries whole. Tracing every delta would only flood the timeline.
        return [];
      default:
        return [unknown(event, type)];
    }
  }

  private system(event: Json): NormalizedEvent[] {
    const subtype = str(event.subtype) ?? 'unknown';
    const nativeType = `system/${subtype}`;
    switch (subtype) {
      case 'init': {
        const events: NormalizedEvent[] = [];
        const sessionId = str(event.session_id);
        if (sessionId && sessionId !== this.sessionId) {
          this.sessionId = sessionId;
          events.push({ nativeSessionId: sessionId, type: 'session' });
        }
        const facts = [
          ['model', str(event.model)],
          ['cwd', str(event.cwd)],
          ['version', str(event.claude_code_version)],
          ['permission mode', str(event.permissionMode)],
        ]
          .filter(([, value]) => value)
          .map(([name, value]) => `${name}: ${value}`);
        events.push(trace({ detail: facts.join('\n'), kind: 'lifecycle', nativeType, title: 'Session started' }));
        events.push(...this.toolServerFailure(event));
        return events;
      }
      case 'api_retry': {
        const status =
          event.error_status === null || event.error_status === undefined
            ? ''
            : ` after HTTP ${String(event.error_status)}`;
        const reason = str(event.error) ? ` (${str(event.error)})` : '';
        const title = `Retrying request ${String(event.attempt ?? '?')}/${String(event.max_retries ?? '?')}${status}${reason}`;
        return [trace({ detail: JSON.stringify(event), kind: 'error', nativeType, title })];
      }
      case 'thinking_tokens': {
        const tokens = typeof event.estimated_tokens === 'number' ? ` (about ${event.estimated_tokens} tokens)` : '';
        return [trace({ kind: 'lifecycle', nativeType, title: `Thinking${tokens}` })];
      }
      default:
        return [unknown(event, nativeType)];
    }
  }

  /**
   * Claude Code has no `required` servers: one it cannot connect to is listed as failed in `init`
   * and the run goes on without its tools. For ours that is the run's failure, said plainly (the
   * model's answer still arrives, and is kept), as Codex's `required` does it.
   */
  private toolServerFailure(event: Json): NormalizedEvent[] {
    const servers = Array.isArray(event.mcp_servers) ? event.mcp_servers : [];
    const ours = servers.find((server) => isObject(server) && server.name === AGENT_TOOL_SERVER_NAME);
    const status = isObject(ours) ? str(ours.status) : null;
    if (status !== 'failed' && status !== 'needs-auth') {
      return [];
    }
    const message = `Agent Manager's MCP server ${AGENT_TOOL_SERVER_NAME} did not connect (${status}): the run had none of its tools`;
    return [
      trace({
        detail: JSON.stringify(ours),
        kind: 'error',
        nativeType: 'system/init',
        status: 'failed',
        title: message,
      }),
      { message, type: 'failed' },
    ];
  }

  private assistant(event: Json): NormalizedEvent[] {
    const message = isObject(event.message) ? event.message : {};
    const blocks = Array.isArray(message.content) ? message.content : [];
    // A sub-agent's (Task tool) output is part of the trace, not of the Requirement's conversation.
    const fromSubagent = typeof event.parent_tool_use_id === 'string';
    // API failures end with a synthetic "API Error: …" message: an error, not an answer.
    const apiError = event.is_api_error_message === true || message.model === '<synthetic>';
    const events: NormalizedEvent[] = [];
    for (const block of blocks) {
      if (!isObject(block)) {
        continue;
      }
      const blockType = str(block.type) ?? 'unknown';
      const nativeType = `assistant/${blockType}`;
      switch (blockType) {
        case 'text': {
          const text = str(block.text) ?? '';
          if (apiError) {
            events.push(
              trace({ detail: text, kind: 'error', nativeType, status: 'failed', title: oneLine(text) || 'API error' }),
            );
            break;
          }
          events.push(
            trace({
              detail: text,
              kind: 'assistant_message',
              nativeType,
              title: fromSubagent ? 'Sub-agent message' : 'Assistant message',
            }),
          );
          if (!fromSubagent) {
            events.push({ text, type: 'assistant_message' });
          }
          break;
        }
        case 'thinking':
        case 'redacted_thinking':
          events.push(trace({ detail: str(block.thinking), kind: 'reasoning', nativeType, title: 'Reasoning' }));
          break;
        case 'tool_use': {
          // An MCP tool (`mcp__<server>__<tool>`) is named `<server>.<tool>`, as in Codex's traces.
          const name = claudeToolName(str(block.name) ?? 'tool');
          const id = str(block.id);
          if (id) {
            this.toolNames.set(id, name);
          }
          const input = isObject(block.input) ? block.input : {};
          events.push(
            trace({
              detail: JSON.stringify(block.input ?? null),
              kind: 'tool_call',
              nativeType,
              status: 'started',
              title: toolTitle(name, input),
              toolCallId: id,
              toolName: name,
            }),
          );
          break;
        }
        default:
          events.push(unknown(block, nativeType));
      }
    }
    // The running total as the run goes (what a budget watches), reported when the run goes on
    // after this response (it calls a tool, or a sub-agent speaks): an answer that ends the turn is
    // counted by the result that follows, with the cost, which only the result reports.
    const responseId = str(message.id);
    if (responseId && isObject(message.usage) && !apiError) {
      this.responseUsage.set(responseId, claudeUsage(message.usage));
      const goesOn = fromSubagent || blocks.some((block) => isObject(block) && block.type === 'tool_use');
      if (goesOn) {
        events.push({ type: 'usage', usage: { ...sumUsage([...this.responseUsage.values()]), costUsd: null } });
      }
    }
    return events;
  }

  private user(event: Json): NormalizedEvent[] {
    const message = isObject(event.message) ? event.message : {};
    const blocks = Array.isArray(message.content) ? message.content : [];
    const events: NormalizedEvent[] = [];
    for (const block of blocks) {
      if (!isObject(block)) {
        continue;
      }
      const blockType = str(block.type) ?? 'unknown';
      const nativeType = `user/${blockType}`;
      if (blockType !== 'tool_result') {
        events.push(unknown(block, nativeType));
        continue;
      }
      const id = str(block.tool_use_id);
      const name = (id && this.toolNames.get(id)) || null;
      const failed = block.is_error === true;
      events.push(
        trace({
          detail: toolResultText(block.content),
          kind: 'tool_result',
          nativeType,
          status: failed ? 'failed' : 'completed',
          title: `${name ?? 'Tool'} ${failed ? 'failed' : 'result'}`,
          toolCallId: id,
          toolName: name,
        }),
      );
    }
    if (blocks.length === 0) {
      events.push(unknown(event, 'user'));
    }
    return events;
  }

  private result(event: Json): NormalizedEvent[] {
    const events: NormalizedEvent[] = [];
    if (isObject(event.usage)) {
      events.push({
        type: 'usage',
        usage: {
          ...claudeUsage(event.usage),
          costUsd: typeof event.total_cost_usd === 'number' ? event.total_cost_usd : null,
        },
      });
    }
    const subtype = str(event.subtype) ?? 'unknown';
    const nativeType = `result/${subtype}`;
    const resultText = str(event.result);
    this.outcomeReported = true;
    // `subtype` says "success" even for API errors: `is_error` is what counts.
    if (event.is_error === true || subtype.startsWith('error')) {
      this.succeeded = false;
      const errors = Array.isArray(event.errors)
        ? event.errors.filter((entry): entry is string => typeof entry === 'string')
        : [];
      const message =
        resultText || errors.join('\n') || `claude reported an error (${str(event.terminal_reason) ?? subtype})`;
      events.push(trace({ detail: message, kind: 'error', nativeType, status: 'failed', title: 'Run failed' }));
      events.push({ message, type: 'failed' });
      return events;
    }
    this.succeeded = true;
    const turns =
      typeof event.num_turns === 'number'
        ? ` after ${event.num_turns} model turn${event.num_turns === 1 ? '' : 's'}`
        : '';
    events.push(trace({ kind: 'lifecycle', nativeType, title: `Finished${turns}` }));
    events.push({ summary: resultText, type: 'completed' });
    return events;
  }
}

function sumUsage(usages: TokenUsage[]): TokenUsage {
  const sum = (key: 'cachedInputTokens' | 'inputTokens' | 'outputTokens' | 'reasoningOutputTokens') =>
    usages.reduce((total, u) => total + u[key], 0);
  return {
    cachedInputTokens: sum('cachedInputTokens'),
    inputTokens: sum('inputTokens'),
    outputTokens: sum('outputTokens'),
    reasoningOutputTokens: sum('reasoningOutputTokens'),
  };
}

/**
 * Claude counts cache reads and writes apart from `input_tokens`; like Codex (OpenAI), our input
 * figure includes them and `cachedInputTokens` is the part read from the cache.
 */
function claudeUsage(usage: Json): TokenUsage {
  const cacheRead = num(usage.cache_read_input_tokens);
  const details = isObject(usage.output_tokens_details) ? usage.output_tokens_details : {};
  return {
    cachedInputTokens: cacheRead,
    inputTokens: num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + cacheRead,
    outputTokens: num(usage.output_tokens),
    reasoningOutputTokens: num(details.thinking_tokens),
  };
}

/** `mcp__code_factory__list_timers` → `code_factory.list_timers`; other tools keep their name. */
export function claudeToolName(name: string): string {
  const match = /^mcp__(.+?)__(.+)$/.exec(name);
  return match ? mcpToolName(match[1], match[2]) : name;
}

function toolTitle(name: string, input: Json): string {
  if (name.includes('.')) {
    return `MCP ${name}`;
  }
  const subject = [
    input.command,
    input.file_path,
    input.notebook_path,
    input.path,
    input.pattern,
    input.url,
    input.query,
    input.description,
  ]
    .map(str)
    .find((value) => value);
  return subject ? `${name}: ${oneLine(subject)}` : name;
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') {
    return content;
  }
  if (!Array.isArray(content)) {
    return content === undefined || content === null ? '' : JSON.stringify(content);
  }
  return content
    .map((block) => {
      if (!isObject(block)) {
        return '';
      }
      if (block.type === 'text') {
        return str(block.text) ?? '';
      }
      return `[${str(block.type) ?? 'content'}]`;
    })
    .join('\n');
}
