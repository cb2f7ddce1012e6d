import type { Requirement } from './api-types';

/** Why a Requirement waits for a person (the protocol's states, read for the reader). */
export type AttentionReason = 'failed' | 'budget' | 'paused' | 'confirm';

/**
 * Waiting for a person: its run failed, its budget was reached (only a person raising it or
 * starting it goes on), a stop paused it with input pending, or its work waits for
 * confirmation. Null when nobody needs to look at it.
 */
export function attentionOf(r: Requirement): AttentionReason | null {
  if (r.status !== 'waiting_confirmation') {
    return null;
  }
  if (r.budgetReachedAt) {
    return 'budget';
  }
  if (r.session.state === 'failed') {
    return 'failed';
  }
  return r.session.pausedAt && r.session.pendingMessageCount > 0 ? 'paused' : 'confirm';
}

/** The first line of an error, short enough for a card. */
export function firstLine(text: string | null, max = 140): string {
  const line = (text ?? '').split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
