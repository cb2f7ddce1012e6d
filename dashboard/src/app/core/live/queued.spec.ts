import type { Message, Requirement, Run } from '../api-types';
import { isPending, isQueued } from './queued';

const requirement = (
  state: Requirement['session']['state'],
  lastConsumedMessageSequence: number,
  pausedAt: string | null = null,
  status: Requirement['status'] = 'waiting_confirmation',
) => ({ session: { lastConsumedMessageSequence, pausedAt, state }, status }) as Requirement;
const message = (sequence: number, deliverToRd = true) => ({ deliverToRd, sequence }) as Message;
const run = (inputToSequence: number) => ({ inputToSequence }) as Run;

describe(isQueued.name, () => {
  it('marks deliverable messages after what the active run took', () => {
    expect(isQueued(message(3), requirement('running', 1), run(2))).toBe(true);
    expect(isQueued(message(2), requirement('running', 1), run(2))).toBe(false);
  });

  it('marks nothing when no run is active or the message is not for the agent', () => {
    expect(isQueued(message(3), requirement('waiting_human', 1), undefined)).toBe(false);
    expect(isQueued(message(3, false), requirement('running', 1), run(2))).toBe(false);
  });
});

describe(isPending.name, () => {
  const paused = requirement('waiting_human', 1, '2026-12-01T10:00:00.000Z');

  it('marks every deliverable message a stop left unconsumed, the interrupted and the queued', () => {
    expect(isPending(message(2), paused)).toBe(true);
    expect(isPending(message(5), paused)).toBe(true);
    expect(isPending(message(1), paused)).toBe(false);
    expect(isPending(message(5, false), paused)).toBe(false);
  });

  it('marks what a failed run or a manager stop left unconsumed (issue 26 §8): no run took it', () => {
    expect(isPending(message(5), requirement('failed', 1))).toBe(true);
    expect(isPending(message(5), requirement('waiting_human', 1))).toBe(true);
    expect(isPending(message(1), requirement('failed', 1))).toBe(false);
  });

  it('marks nothing while a run works (that is queued) or once the Requirement is cancelled', () => {
    expect(isPending(message(5), requirement('running', 1))).toBe(false);
    expect(isPending(message(5), requirement('completed', 1, null, 'cancelled'))).toBe(false);
  });
});
