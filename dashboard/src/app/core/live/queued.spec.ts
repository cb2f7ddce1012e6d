import type { Message, Requirement, Run } from '../models';
import { isQueued } from './queued';

const requirement = (state: Requirement['session']['state'], lastConsumedMessageSequence: number) =>
  ({ session: { lastConsumedMessageSequence, state } }) as Requirement;
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
