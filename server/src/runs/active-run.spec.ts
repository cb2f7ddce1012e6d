import fc from 'fast-check';

import { REQUIREMENT_STATUSES } from '@libs/contracts';

import { type FinalRunStatus, sessionAfterRun } from './active-run';

const FINAL: FinalRunStatus[] = ['succeeded', 'failed', 'timed_out', 'cancelled'];
const INTERRUPTS = [null, 'stop', 'steer', 'cancel', 'shutdown', 'budget'] as const;

const ends = fc.record({
  active: fc.record({
    capturedCount: fc.nat({ max: 5 }),
    interruptMode: fc.constantFrom(...INTERRUPTS),
  }),
  overBudget: fc.boolean(),
  pending: fc.nat({ max: 8 }),
  requirementStatus: fc.constantFrom(...REQUIREMENT_STATUSES),
  status: fc.constantFrom(...FINAL),
  stopping: fc.boolean(),
});

/** Invariant 6 and the pause rules as properties of the decision a run's close makes. */
describe('sessionAfterRun', () => {
  it('continues exactly when newer input waits, nothing holds the session and the run did not fail', () => {
    fc.assert(
      fc.property(ends, (end) => {
        const { continues, next, paused } = sessionAfterRun(end);
        const newer = end.pending > (end.status === 'succeeded' ? 0 : end.active.capturedCount);
        expect(paused).toBe(end.active.interruptMode === 'stop' || end.overBudget);
        expect(continues).toBe(
          newer &&
            !paused &&
            !end.stopping &&
            end.requirementStatus === 'doing' &&
            (end.status === 'succeeded' || end.status === 'cancelled'),
        );
        // What the session becomes follows: a cancelled Requirement completes it, whatever else.
        if (end.requirementStatus === 'cancelled') {
          expect(next).toBe('completed');
        } else if (continues) {
          expect(next).toBe('continues');
        } else {
          expect(next).toBe(end.status === 'failed' || end.status === 'timed_out' ? 'failed' : 'waiting_human');
        }
      }),
    );
  });

  it('never goes on during a stop of the manager, a person’s stop or a reached budget', () => {
    fc.assert(
      fc.property(ends, fc.constantFrom('manager', 'person', 'budget'), (end, hold) => {
        const held = {
          ...end,
          active: { ...end.active, interruptMode: hold === 'person' ? ('stop' as const) : end.active.interruptMode },
          overBudget: hold === 'budget' || end.overBudget,
          stopping: hold === 'manager' || end.stopping,
        };
        expect(sessionAfterRun(held).continues).toBe(false);
      }),
    );
  });

  it('takes a steer’s newer input at once, and rests when the interrupted run already held the latest', () => {
    const steered = { capturedCount: 2, interruptMode: 'steer' as const };
    const base = { overBudget: false, requirementStatus: 'doing' as const, status: 'cancelled' as const };
    expect(sessionAfterRun({ ...base, active: steered, pending: 3, stopping: false })).toEqual({
      continues: true,
      next: 'continues',
      paused: false,
    });
    expect(sessionAfterRun({ ...base, active: steered, pending: 2, stopping: false })).toEqual({
      continues: false,
      next: 'waiting_human',
      paused: false,
    });
  });
});
