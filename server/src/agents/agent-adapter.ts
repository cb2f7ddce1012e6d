import type { Provider, ReasoningEffort, TraceKind } from '@libs/contracts';

// The boundary between the run orchestrator and one coding-agent CLI. Adapters are pure: they
// build a command line and turn the CLI's JSONL into provider-neutral events. Only the process
// runner starts processes, and only the orchestrator decides what events mean for a run.

export type { TraceKind } from '@libs/contracts';
export type TraceStatus = import('@libs/contracts').TraceStatus | null;

/** One entry of a run's trace timeline (stored as the payload of `run.trace.appended`). */
export interface NormalizedTrace {
  kind: TraceKind;
  status: TraceStatus;
  /** Short, one line: what happened ("Ran `npm test`", "Reasoning", "Reconnecting 1/5"). */
  title: string;
  /** The full text (command output, message, reasoning); the runner caps it at 64 KiB. */
  detail: string | null;
  toolName: string | null;
  toolCallId: string | null;
  /** The CLI's own event type, e.g. `item.completed/command_execution` or `assistant/tool_use`. */
  nativeType: string;
}

export interface TokenUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningOutputTokens: number;
  /** What the provider says the run cost in US dollars, when it says (Claude Code's result does). */
  costUsd?: number | null;
}

export type NormalizedEvent =
  /** The CLI's own session/thread id: stored on the session the moment it appears. */
  | { type: 'session'; nativeSessionId: string }
  | { type: 'trace'; trace: NormalizedTrace }
  /** A final assistant message, to become an `rd_agent` conversation message. */
  | { type: 'assistant_message'; text: string }
  /** Cumulative usage for the run so far (replaces earlier figures). */
  | { type: 'usage'; usage: TokenUsage }
  /** The CLI reported success (Codex `turn.completed`; Claude `result` without `is_error`). */
  | { type: 'completed'; summary: string | null }
  /** The CLI reported failure. */
  | { type: 'failed'; message: string };

/** The run's MCP server's name in the CLI: its tools reach the model as `mcp__code_factory__<tool>`. */
export const AGENT_TOOL_SERVER_NAME = 'code_factory';

/**
 * Agent Manager's MCP tools for one run, served by the manager over Streamable HTTP and configured
 * on the command line of that run only: the user's own MCP configuration stays untouched and in force.
 */
export interface AgentToolServer {
  /** Its name in the CLI: tools appear as `mcp__<name>__<tool>` (Claude) or in namespace `mcp__<name>` (Codex). */
  name: string;
  /** The endpoint (`http://127.0.0.1:<port>/api/agent/mcp`). */
  url: string;
  /** The variable of the run's environment holding the credential to send as Bearer: named, never written out. */
  tokenVariable: string;
}

export interface InvocationContext {
  role: 'rd' | 'reviewer';
  /** The workspace root: the process's cwd. */
  workspace: string;
  /** Resume this native session; null starts a new one. */
  nativeSessionId: string | null;
  /** Claude only: the id for a new session (`--session-id`); we choose it so it is known at once. */
  newSessionId: string;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  /** Appended to the CLI's own system prompt; never replaces the repository's AGENTS.md/CLAUDE.md. */
  instructions: string;
  /** The delivered input, sent on stdin. */
  prompt: string;
  /** Absolute paths of image attachments (Codex passes them with `--image=`). */
  images: string[];
  /** The executable to run (from configuration; default `codex` / `claude` on PATH). */
  executable: string;
  /** The environment for the child (already holds PATH and the CODE_FACTORY_* variables). */
  env: Record<string, string>;
  /** Whether this process runs as root (Claude then needs IS_SANDBOX=1). */
  runningAsRoot: boolean;
  /** RD runs: the MCP server with the run's Agent Manager tools; reviewers have none (no credential). */
  toolServer: AgentToolServer | null;
}

export interface Invocation {
  command: string;
  args: string[];
  env: Record<string, string>;
  stdin: string;
}

/** Turns one run's stdout lines into events; stateful, one per run. */
export interface OutputParser {
  /** One complete stdout line (without the newline). Never throws. */
  line(text: string): NormalizedEvent[];
  /** The process ended; adds a `failed` event when the CLI did not report an outcome itself. */
  end(exit: { code: number | null; signal: string | null; stderr: string }): NormalizedEvent[];
}

export interface AgentAdapter {
  readonly provider: Provider;
  buildInvocation(context: InvocationContext): Invocation;
  createParser(): OutputParser;
}
