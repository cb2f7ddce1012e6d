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
  it('goes on only after a run that succeeded or was interrupted, on a Requirement still doing, with newer input', () => {
    fc.assert(
      fc.property(ends, (end) => {
        const { continues, next } = sessionAfterRun(end);
        expect(next === 'continues').toBe(continues);
        if (continues) {
          expect(['succeeded', 'cancelled']).toContain(end.status);
          expect(end.requirementStatus).toBe('doing');
          expect(end.pending).toBeGreaterThan(0);
        }
      }),
    );
  });

  it('completes the session of a cancelled Requirement, and fails it on a failed or timed-out run', () => {
    fc.assert(
      fc.property(ends, (end) => {
        const { next } = sessionAfterRun(end);
        if (end.requirementStatus === 'cancelled') {
          expect(next).toBe('completed');
        } else if (end.status === 'failed' || end.status === 'timed_out') {
          expect(next).toBe('failed');
        } else {
          expect(['continues', 'waiting_human']).toContain(next);
        }
      }),
    );
  });

  it('after a success, goes on for any input newer than what it consumed; after an interruption, only for input newer than it held', () => {
    fc.assert(
      fc.property(ends, (end) => {
        const free = { ...end, active: { ...end.active, interruptMode: null }, overBudget: false, stopping: false };
        const doing = { ...free, requirementStatus: 'doing' as const };
        expect(sessionAfterRun({ ...doing, pending: 0, status: 'succeeded' }).continues).toBe(false);
        expect(sessionAfterRun({ ...doing, pending: 1, status: 'succeeded' }).continues).toBe(true);
        const held = doing.active.capturedCount;
        expect(sessionAfterRun({ ...doing, pending: held, status: 'cancelled' }).continues).toBe(false);
        expect(sessionAfterRun({ ...doing, pending: held + 1, status: 'cancelled' }).continues).toBe(true);
      }),
    );
  });

  it('is paused exactly by a person’s stop or a reached budget', () => {
    fc.assert(
      fc.property(ends, (end) => {
        expect(sessionAfterRun(end).paused).toBe(end.active.interruptMode === 'stop' || end.overBudget);
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
