import { REQUIREMENT_STATUSES, RequirementStatus, SESSION_STATES, SessionState } from '@libs/contracts';

import {
  IllegalTransitionError,
  REQUIREMENT_TRANSITIONS,
  SESSION_TRANSITIONS,
  assertRequirementTransition,
  assertSessionTransition,
  requirementTransitionAllowed,
  sessionTransitionAllowed,
} from './requirement-state';
import { RequirementLifecycle } from './requirement-lifecycle';

// The designed machine, written out pair by pair: the table in requirement-state.ts must say
// exactly this. Changing a transition means changing both, on purpose.
const REQUIREMENT_EDGES = new Set([
  'todo→doing',
  'todo→cancelled',
  'doing→waiting_confirmation',
  'doing→cancelled',
  'waiting_confirmation→doing',
  'waiting_confirmation→done',
  'waiting_confirmation→cancelled',
  'done→doing',
]);
const SESSION_EDGES = new Set([
  'idle→running',
  'idle→completed',
  'running→waiting_human',
  'running→failed',
  'running→completed',
  'waiting_human→running',
  'waiting_human→completed',
  'failed→running',
  'failed→completed',
  'completed→running',
]);

describe('the Requirement state machine', () => {
  const statusPairs = REQUIREMENT_STATUSES.flatMap((from) =>
    REQUIREMENT_STATUSES.map((to) => [from, to] as [RequirementStatus, RequirementStatus]),
  );
  const statePairs = SESSION_STATES.flatMap((from) =>
    SESSION_STATES.map((to) => [from, to] as [SessionState, SessionState]),
  );

  it.each(statusPairs)('status %s → %s is allowed exactly when designed', (from, to) => {
    const designed = from === to || REQUIREMENT_EDGES.has(`${from}→${to}`);
    expect(requirementTransitionAllowed(from, to)).toBe(designed);
    if (designed) {
      expect(() => assertRequirementTransition('req_x', from, to)).not.toThrow();
    } else {
      expect(() => assertRequirementTransition('req_x', from, to)).toThrow(
        new IllegalTransitionError('requirement status', 'req_x', from, to),
      );
    }
  });

  it.each(statePairs)('session state %s → %s is allowed exactly when designed', (from, to) => {
    const designed = from === to || SESSION_EDGES.has(`${from}→${to}`);
    expect(sessionTransitionAllowed(from, to)).toBe(designed);
    if (!designed) {
      expect(() => assertSessionTransition('ses_x', from, to)).toThrow(/illegal session state transition of ses_x/);
    }
  });

  it('names what makes every transition, and cancelled is terminal', () => {
    for (const table of [REQUIREMENT_TRANSITIONS, SESSION_TRANSITIONS] as Array<
      Record<string, Record<string, string>>
    >) {
      for (const reasons of Object.values(table)) {
        for (const reason of Object.values(reasons)) {
          expect(reason.length).toBeGreaterThan(10);
        }
      }
    }
    expect(REQUIREMENT_TRANSITIONS.cancelled).toEqual({});
  });

  it('names, for every transition, the RequirementLifecycle intents that make it (and they exist)', () => {
    const intents = Object.getOwnPropertyNames(RequirementLifecycle.prototype);
    for (const table of [REQUIREMENT_TRANSITIONS, SESSION_TRANSITIONS] as Array<
      Record<string, Record<string, string>>
    >) {
      for (const reason of Object.values(table).flatMap((reasons) => Object.values(reasons))) {
        const named = /\(RequirementLifecycle\.(\w+)((?:, \.\w+)*)\)$/.exec(reason);
        expect(named).not.toBeNull();
        const names = [named?.[1], ...(named?.[2].split(', .').filter(Boolean) ?? [])];
        for (const name of names) {
          expect(intents).toContain(name);
        }
      }
    }
  });
});
