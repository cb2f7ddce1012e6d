import type { Message, Requirement, Run } from '../api-types';

/**
 * A message the agent has not read yet while a run works on earlier input: it waits for the next
 * run (or a steer). What the active run took is up to its `inputToSequence`.
 */
export function isQueued(message: Message, requirement: Requirement, activeRun: Run | undefined): boolean {
  if (!message.deliverToRd || requirement.session.state !== 'running') {
    return false;
  }
  const consumedUpTo = Math.max(requirement.session.lastConsumedMessageSequence, activeRun?.inputToSequence ?? 0);
  return message.sequence > consumedUpTo;
}

/**
 * A message left waiting while no run works: a stop's pause, a failed run, or a run a manager stop
 * cut short (issue 26 §8) consumed none of it, so the next start delivers it. While a run works,
 * what it has not taken is "queued" instead; a cancelled Requirement delivers nothing any more.
 */
export function isPending(message: Message, requirement: Requirement): boolean {
  if (!message.deliverToRd || requirement.status === 'cancelled' || requirement.session.state === 'running') {
    return false;
  }
  return message.sequence > requirement.session.lastConsumedMessageSequence;
}
