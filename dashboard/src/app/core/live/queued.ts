import type { Message, Requirement, Run } from '../models';

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
 * A message a stop left waiting: the session is paused and nothing consumed it yet (the
 * interrupted input as well as what was queued or arrived since). The next start delivers it.
 */
export function isPending(message: Message, requirement: Requirement): boolean {
  return requirement.session.pausedAt !== null && message.deliverToRd && message.sequence > requirement.session.lastConsumedMessageSequence;
}
