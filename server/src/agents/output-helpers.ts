import { constants as osConstants } from 'node:os';

import type { NormalizedEvent, NormalizedTrace } from './agent-adapter';

// Helpers both output parsers share.

export const TITLE_MAX = 200;
export const UNPARSEABLE_DETAIL_MAX = 8 * 1024;
const STDERR_SUMMARY_MAX = 1000;

export type Json = Record<string, unknown>;

export function trace(
  fields: Partial<NormalizedTrace> & Pick<NormalizedTrace, 'kind' | 'nativeType' | 'title'>,
): NormalizedEvent {
  return {
    trace: {
      detail: fields.detail ?? null,
      kind: fields.kind,
      nativeType: fields.nativeType,
      status: fields.status ?? null,
      title: cap(fields.title, TITLE_MAX),
      toolCallId: fields.toolCallId ?? null,
      toolName: fields.toolName ?? null,
    },
    type: 'trace',
  };
}

export function unparseable(line: string): NormalizedEvent {
  return trace({
    detail: cap(line, UNPARSEABLE_DETAIL_MAX),
    kind: 'error',
    nativeType: 'unparseable',
    title: 'unparseable output line',
  });
}

export function unknown(value: Json, nativeType: string): NormalizedEvent {
  return trace({
    detail: cap(JSON.stringify(value), UNPARSEABLE_DETAIL_MAX),
    kind: 'lifecycle',
    nativeType,
    title: nativeType,
  });
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

export function oneLine(text: string): string {
  return cap(text.replace(/\s+/g, ' ').trim(), TITLE_MAX);
}

export function cap(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** "codex exited with code 1: <stderr>", "codex was killed by SIGTERM". */
export function exitMessage(
  cli: string,
  exit: { code: number | null; signal: string | null; stderr: string },
  reportedSuccess = false,
): string {
  let message: string;
  if (exit.signal) {
    message = `${cli} was killed by ${exit.signal}`;
  } else if (exit.code === null) {
    message = `${cli} ended without an exit code`;
  } else {
    const signalName = exit.code > 128 ? signalNameOf(exit.code - 128) : null;
    message = `${cli} exited with code ${exit.code}${signalName ? ` (${signalName})` : ''}`;
    if (exit.code === 0) {
      message += ' without reporting an outcome';
    } else if (reportedSuccess) {
      message += ' after reporting success';
    }
  }
  const stderr = stderrSummary(exit.stderr);
  return stderr ? `${message}: ${stderr}` : message;
}

export function signalNameOf(signal: number): string | null {
  const entry = Object.entries(osConstants.signals).find(([, value]) => value === signal);
  return entry ? entry[0] : null;
}

export function stderrSummary(stderr: string): string {
  const text = stderr.replace(/\s+/g, ' ').trim();
  return text.length > STDERR_SUMMARY_MAX ? `…${text.slice(-(STDERR_SUMMARY_MAX - 1))}` : text;
}

/**
 * One stdout line → events. Blank lines are skipped; anything that is not a JSON object, or
 * that the parser chokes on, becomes an error trace: output is never dropped silently and
 * never crashes the run.
 */
export function parseJsonLine(text: string, interpret: (value: Json) => NormalizedEvent[]): NormalizedEvent[] {
  if (text.trim() === '') {
    return [];
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [unparseable(text)];
  }
  if (!isObject(value)) {
    return [unparseable(text)];
  }
  try {
    return interpret(value);
  } catch (error) {
    return [
      trace({
        detail: `${error instanceof Error ? error.message : String(error)}\n${cap(text, UNPARSEABLE_DETAIL_MAX)}`,
        kind: 'error',
        nativeType: str(value.type) ?? 'unknown',
        title: 'could not interpret output line',
      }),
    ];
  }
}

/** `<server>.<tool>`, the trace's name for an MCP tool in both CLIs. */
export function mcpToolName(server: string | null | undefined, tool: string | null | undefined): string {
  return [server, tool].filter(Boolean).join('.') || 'mcp';
}

/** The text blocks of an MCP result's `content`; other blocks by their type (`[image]`). */
export function mcpContentText(content: unknown): string {
  if (!Array.isArray(content)) {
    return content === undefined || content === null ? '' : JSON.stringify(content);
  }
  return content
    .map((block) =>
      isObject(block) ? (block.type === 'text' ? (str(block.text) ?? '') : `[${str(block.type) ?? 'content'}]`) : '',
    )
    .join('\n');
}
