import * as fs from 'node:fs';
import * as path from 'node:path';

import type { AgentAdapter, NormalizedEvent, NormalizedTrace } from '../../server/src/agents/agent-adapter';

// Loading the captured CLI transcripts (test/fixtures/agent-transcripts) and picking events
// out of a parse, for both adapters' specs.

export interface Transcript {
  lines: string[];
  meta: string;
  exit: { code: number | null; signal: string | null; stderr: string };
}

export function transcriptDirectory(cli: 'codex' | 'claude'): string {
  return path.join(__dirname, '..', 'fixtures', 'agent-transcripts', cli);
}

/** stdout lines plus the exit code, signal and stderr its meta.md recorded. */
export function loadTranscript(cli: 'codex' | 'claude', name: string): Transcript {
  const dir = transcriptDirectory(cli);
  const lines = fs.readFileSync(path.join(dir, `${name}.jsonl`), 'utf8').split('\n');
  if (lines.at(-1) === '') {
    lines.pop();
  }
  const meta = fs.readFileSync(path.join(dir, `${name}.meta.md`), 'utf8');
  const outcome = /- exit code: (\S+?); terminated by signal: (\w+)/.exec(meta);
  if (!outcome) {
    throw new Error(`${name}.meta.md has no outcome line`);
  }
  const stderr = /- stderr:\n```\n([\s\S]*?)```/.exec(meta)?.[1] ?? '';
  return {
    exit: {
      code: outcome[1] === 'none' ? null : Number(outcome[1]),
      signal: outcome[2] === 'no' ? null : outcome[2],
      stderr,
    },
    lines,
    meta,
  };
}

/** Runs every line and the end through a fresh parser of `adapter`. */
export function parseWith(adapter: AgentAdapter, transcript: Pick<Transcript, 'lines' | 'exit'>): NormalizedEvent[] {
  const parser = adapter.createParser();
  return [...transcript.lines.flatMap((line) => parser.line(line)), ...parser.end(transcript.exit)];
}

export const traces = (events: NormalizedEvent[]): NormalizedTrace[] =>
  events.flatMap((event) => (event.type === 'trace' ? [event.trace] : []));
export const messages = (events: NormalizedEvent[]): string[] =>
  events.flatMap((event) => (event.type === 'assistant_message' ? [event.text] : []));
export const sessions = (events: NormalizedEvent[]): string[] =>
  events.flatMap((event) => (event.type === 'session' ? [event.nativeSessionId] : []));
export const outcomes = (events: NormalizedEvent[]) =>
  events.filter(
    (event): event is Extract<NormalizedEvent, { type: 'completed' | 'failed' }> =>
      event.type === 'completed' || event.type === 'failed',
  );
export const usages = (events: NormalizedEvent[]) =>
  events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));
