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
  cap,
  exitMessage,
  isObject,
  Json,
  mcpContentText,
  mcpToolName,
  num,
  oneLine,
  parseJsonLine,
  str,
  trace,
  unknown,
} from './output-helpers';

// Codex CLI (`codex exec --json`). Verified against codex-cli 0.171.0 transcripts in
// test/fixtures/agent-transcripts/codex/.

/**
 * A TOML basic string ("…") holding `value` exactly: `-c key=value` is parsed as TOML, and a value
 * that fails to parse is silently taken as a raw literal, so a bad escape would change the text.
 * Only escapes that TOML and JSON share are produced.
 */
export function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const cp = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        break;
      case '\\':
        out += '\\\\';
        break;
      case '\b':
        out += '\\b';
        break;
      case '\t':
        out += '\\t';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\f':
        out += '\\f';
        break;
      case '\r':
        out += '\\r';
        break;
      default:
        if (cp < 0x20 || cp === 0x7f) {
          out += `\\u${cp.toString(16).padStart(4, '0')}`;
        } else if (cp >= 0xd800 && cp <= 0xdfff) {
          // A lone surrogate is no Unicode scalar value: TOML (and UTF-8 argv) cannot carry it.
          out += '\\ufffd';
        } else {
          out += ch;
        }
    }
  }
  return `${out}"`;
}

/**
 * `-c` overrides that add one MCP server for this run: each sets one key under
 * `mcp_servers.<name>`, so the user's own servers in config.toml stay as they are. The server is
 * the manager's Streamable HTTP endpoint; `bearer_token_env_var` names the variable Codex reads the
 * run credential from, so the token is never written into the command line. `required`: `codex
 * exec` would otherwise send the first request without the tools of a server it could not reach;
 * a required one that cannot be initialised fails the run saying so.
 */
export function codexToolServerOptions(server: AgentToolServer): string[] {
  const key = `mcp_servers.${server.name}`;
  return [
    '-c',
    `${key}.url=${tomlString(server.url)}`,
    '-c',
    `${key}.bearer_token_env_var=${tomlString(server.tokenVariable)}`,
    '-c',
    `${key}.required=true`,
  ];
}

/**
 * Codex's refusal to start without a required MCP server, when that server is ours, as one readable
 * line: its stderr ends in a stack backtrace and spells out Rust transport types, and the reason
 * (the address it could not reach, the HTTP status) sits in the middle of it.
 */
function toolServerFailure(stderr: string): string | null {
  const match = /required MCP servers failed to initiali[sz]e: ([^:\s]+):([^\n]*)/.exec(stderr);
  if (match?.[1] !== AGENT_TOOL_SERVER_NAME) {
    return null;
  }
  const reason = cap(
    match[2]
      .replace(/ Transport \[[^\]]*\]/g, ' transport')
      .replace(/\s+/g, ' ')
      .trim(),
    500,
  );
  return `Agent Manager's MCP server ${AGENT_TOOL_SERVER_NAME} could not be initialised, so codex did not start: ${reason}`;
}

export class CodexAdapter implements AgentAdapter {
  readonly provider = 'codex' as const;

  buildInvocation(context: InvocationContext): Invocation {
    const args = [
      'exec',
      '--json',
      '--color',
      'never',
      '--dangerously-bypass-approvals-and-sandbox',
      '--skip-git-repo-check',
      // Codex runs tool commands in a login shell whose /etc/profile rewrites PATH, dropping our
      // launcher directory: `code-factory-cli` would be "command not found". Without the login
      // shell the agent's PATH reaches its commands as given. (The trade-off: toolchains set up
      // only in login profiles, like nvm in ~/.profile, are not on PATH either; see docs.)
      '-c',
      'allow_login_shell=false',
    ];
    if (context.role === 'reviewer') {
      args.push('--ephemeral');
    }
    // `--image` takes several values and splits them on commas: always the `=` form, one flag per
    // image, and never directly before `-` (it would be read as another image). A path with a comma
    // cannot be passed at all; the prompt still names it, so the agent can open it itself.
    for (const image of context.images) {
      if (!image.includes(',')) {
        args.push(`--image=${image}`);
      }
    }
    if (context.model) {
      args.push('--model', context.model);
    }
    if (context.reasoningEffort) {
      args.push('-c', `model_reasoning_effort=${tomlString(context.reasoningEffort)}`);
    }
    args.push('-c', `developer_instructions=${tomlString(context.instructions)}`);
    if (context.toolServer) {
      args.push(...codexToolServerOptions(context.toolServer));
    }
    // Options stay before the `resume` subcommand, as in the captured resume run; `-` reads the
    // prompt from stdin without the "Reading prompt from stdin..." notice.
    if (context.nativeSessionId) {
      args.push('resume', context.nativeSessionId);
    }
    args.push('-');
    return { args, command: context.executable, env: { ...context.env }, stdin: context.prompt };
  }

  createParser(): OutputParser {
    return new CodexOutputParser();
  }
}

class CodexOutputParser implements OutputParser {
  private outcomeReported = false;
  private succeeded = false;
  /** Agent messages of the current model attempt: dropped if the attempt is retried. */
  private attemptMessages: string[] = [];
  /** Agent messages of attempts that are known to have finished (a tool ran after them). */
  private turnMessages: string[] = [];

  line(text: string): NormalizedEvent[] {
    return parseJsonLine(text, (value) => this.event(value));
  }

  end(exit: { code: number | null; signal: string | null; stderr: string }): NormalizedEvent[] {
    if (this.outcomeReported && (!this.succeeded || exit.code === null || exit.code === 0)) {
      return [];
    }
    return [{ message: toolServerFailure(exit.stderr) ?? exitMessage('codex', exit, this.succeeded), type: 'failed' }];
  }

  private event(event: Json): NormalizedEvent[] {
    const type = str(event.type);
    switch (type) {
      case 'thread.started': {
        const threadId = str(event.thread_id);
        const started = trace({ detail: threadId, kind: 'lifecycle', nativeType: type, title: 'Thread started' });
        return threadId ? [{ nativeSessionId: threadId, type: 'session' }, started] : [started];
      }
      case 'turn.started':
        this.attemptMessages = [];
        this.turnMessages = [];
        return [trace({ kind: 'lifecycle', nativeType: type, title: 'Turn started' })];
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        return this.item(type, isObject(event.item) ? event.item : {}, event);
      case 'error': {
        // A retry notice ("Reconnecting... 1/5 (…)") or the final error before `turn.failed`. Either
        // way the current attempt's messages will not stand: a retry prints them again.
        this.attemptMessages = [];
        const message = str(event.message) ?? '';
        return [trace({ detail: message, kind: 'error', nativeType: type, title: oneLine(message) || 'Error' })];
      }
      case 'turn.completed': {
        const messages = [...this.turnMessages, ...this.attemptMessages];
        this.turnMessages = [];
        this.attemptMessages = [];
        this.outcomeReported = true;
        this.succeeded = true;
        const events: NormalizedEvent[] = messages.map((text) => ({ text, type: 'assistant_message' }));
        if (isObject(event.usage)) {
          events.push({ type: 'usage', usage: codexUsage(event.usage) });
        }
        events.push(trace({ kind: 'lifecycle', nativeType: type, title: 'Turn completed' }));
        events.push({ summary: messages.at(-1) ?? null, type: 'completed' });
        return events;
      }
      case 'turn.failed': {
        this.turnMessages = [];
        this.attemptMessages = [];
        this.outcomeReported = true;
        this.succeeded = false;
        const error = isObject(event.error) ? event.error : {};
        const message = str(error.message) || 'codex reported a failed turn';
        return [
          trace({ detail: message, kind: 'error', nativeType: type, status: 'failed', title: 'Turn failed' }),
          { message, type: 'failed' },
        ];
      }
      default:
        return [unknown(event, type ?? 'unknown')];
    }
  }

  private item(eventType: string, item: Json, event: Json): NormalizedEvent[] {
    const itemType = str(item.type) ?? 'unknown';
    const nativeType = `${eventType}/${itemType}`;
    const id = str(item.id);
    const done = eventType === 'item.completed';
    switch (itemType) {
      case 'agent_message': {
        if (!done) {
          return [];
        }
        const text = str(item.text) ?? '';
        this.attemptMessages.push(text);
        return [trace({ detail: text, kind: 'assistant_message', nativeType, title: 'Assistant message' })];
      }
      case 'reasoning': {
        if (!done) {
          return [];
        }
        const text = str(item.text) ?? '';
        return [trace({ detail: text, kind: 'reasoning', nativeType, title: reasoningTitle(text) })];
      }
      case 'command_execution': {
        const command = displayCommand(str(item.command) ?? '');
        if (!done) {
          if (eventType === 'item.updated') {
            return [];
          }
          return [
            trace({
              detail: str(item.command),
              kind: 'tool_call',
              nativeType,
              status: 'started',
              title: `Running \`${oneLine(command)}\``,
              toolCallId: id,
              toolName: 'shell',
            }),
          ];
        }
        // The command's result goes into the next model request, so the attempt that asked for it
        // was accepted: its messages are no longer at risk from a retry.
        this.commitAttempt();
        const exitCode = typeof item.exit_code === 'number' ? item.exit_code : null;
        const failed = item.status === 'failed' || item.status === 'declined' || (exitCode !== null && exitCode !== 0);
        return [
          trace({
            detail: str(item.aggregated_output) ?? '',
            kind: 'tool_result',
            nativeType,
            status: failed ? 'failed' : 'completed',
            title: `Ran \`${oneLine(command)}\`${exitCode !== null && exitCode !== 0 ? ` (exit code ${exitCode})` : ''}`,
            toolCallId: id,
            toolName: 'shell',
          }),
        ];
      }
      case 'mcp_tool_call':
        return this.mcpTool(eventType, item);
      case 'file_change':
      case 'web_search':
        return this.otherTool(eventType, itemType, item);
      case 'error': {
        // A warning (e.g. "Model metadata for `…` not found"), not a failure of the run.
        const message = str(item.message) ?? '';
        return [trace({ detail: message, kind: 'lifecycle', nativeType, title: `Warning: ${oneLine(message)}` })];
      }
      case 'todo_list': {
        const items = Array.isArray(item.items) ? item.items.filter(isObject) : [];
        const detail = items
          .map((entry) => `[${entry.completed === true ? 'x' : ' '}] ${str(entry.text) ?? ''}`)
          .join('\n');
        return [trace({ detail, kind: 'lifecycle', nativeType, title: 'Plan updated' })];
      }
      default:
        return [unknown(event, nativeType)];
    }
  }

  /**
   * An MCP tool (`server`, `tool`, `arguments`; when done `result.content` or `error`, `status`
   * `failed` for a tool error), named `<server>.<tool>` as Claude's are: the call shows the
   * arguments, the result what the tool answered.
   */
  private mcpTool(eventType: string, item: Json): NormalizedEvent[] {
    const nativeType = `${eventType}/mcp_tool_call`;
    const id = str(item.id);
    const toolName = mcpToolName(str(item.server), str(item.tool));
    if (eventType !== 'item.completed') {
      if (eventType === 'item.updated') {
        return [];
      }
      return [
        trace({
          detail: JSON.stringify(item.arguments ?? null),
          kind: 'tool_call',
          nativeType,
          status: 'started',
          title: `MCP ${toolName}`,
          toolCallId: id,
          toolName,
        }),
      ];
    }
    this.commitAttempt();
    const error = isObject(item.error) ? (str(item.error.message) ?? JSON.stringify(item.error)) : str(item.error);
    const failed = item.status === 'failed' || item.status === 'declined' || error !== null;
    const result = isObject(item.result) ? item.result : {};
    const detail = error ?? mcpContentText(result.content);
    return [
      trace({
        detail,
        kind: 'tool_result',
        nativeType,
        status: failed ? 'failed' : 'completed',
        title: `${toolName} ${failed ? 'failed' : 'result'}`,
        toolCallId: id,
        toolName,
      }),
    ];
  }

  private otherTool(eventType: string, itemType: string, item: Json): NormalizedEvent[] {
    const nativeType = `${eventType}/${itemType}`;
    const id = str(item.id);
    let toolName: string = itemType;
    let title: string = itemType;
    if (itemType === 'web_search') {
      toolName = 'web_search';
      title = `Web search: ${oneLine(str(item.query) ?? '')}`;
    } else {
      const changes = Array.isArray(item.changes) ? item.changes.filter(isObject) : [];
      toolName = 'apply_patch';
      title = `Edited ${changes.map((change) => str(change.path) ?? '?').join(', ') || 'files'}`;
    }
    if (eventType !== 'item.completed') {
      if (eventType === 'item.updated') {
        return [];
      }
      return [
        trace({
          detail: JSON.stringify(item),
          kind: 'tool_call',
          nativeType,
          status: 'started',
          title,
          toolCallId: id,
          toolName,
        }),
      ];
    }
    this.commitAttempt();
    const failed = item.status === 'failed' || item.status === 'declined' || isObject(item.error);
    return [
      trace({
        detail: JSON.stringify(item),
        kind: 'tool_result',
        nativeType,
        status: failed ? 'failed' : 'completed',
        title,
        toolCallId: id,
        toolName,
      }),
    ];
  }

  private commitAttempt(): void {
    this.turnMessages.push(...this.attemptMessages);
    this.attemptMessages = [];
  }
}

function codexUsage(usage: Json): TokenUsage {
  return {
    cachedInputTokens: num(usage.cached_input_tokens),
    inputTokens: num(usage.input_tokens),
    outputTokens: num(usage.output_tokens),
    reasoningOutputTokens: num(usage.reasoning_output_tokens),
  };
}

/** `/bin/bash -lc 'echo hi'` → `echo hi`: Codex wraps every command in the user's (login) shell. */
export function displayCommand(command: string): string {
  const match = /^(?:\S*\/)?(?:bash|zsh|dash|sh) -l?c (.*)$/s.exec(command);
  if (!match) {
    return command;
  }
  const quoted = match[1];
  if (/^'(?:[^']|'\\'')*'$/s.test(quoted)) {
    return quoted.slice(1, -1).replace(/'\\''/g, "'");
  }
  if (/^"(?:[^"\\]|\\.)*"$/s.test(quoted)) {
    return quoted.slice(1, -1).replace(/\\(["\\$`])/g, '$1');
  }
  return quoted;
}

function reasoningTitle(text: string): string {
  const heading = /^\*\*(.+?)\*\*/.exec(text.trim());
  return heading ? `Reasoning: ${oneLine(heading[1])}` : 'Reasoning';
}
