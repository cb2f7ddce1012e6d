import { REQUIREMENT_STATUSES, RequirementStatus, SESSION_STATES, SessionState } from '@libs/contracts';

/**
 * The Requirement's state machine, in one place: every status and session-state change the
 * manager makes, and what makes it. Only RequirementLifecycle (requirement-lifecycle.ts) changes a
 * status or a state, one intent per change named below; RequirementsRepository checks each change
 * against these tables before it stages it, so a transition missing here fails its unit of work (rolled back,
 * logged as an internal error) instead of writing a state nobody designed for. Setting a state
 * to itself is not a transition and is always allowed.
 */
export const REQUIREMENT_TRANSITIONS: Readonly<
  Record<RequirementStatus, Readonly<Partial<Record<RequirementStatus, string>>>>
> = {
  cancelled: {},
  doing: {
    cancelled: 'a person cancels it while it works (RequirementLifecycle.cancel)',
    waiting_confirmation:
      'its run ends and nothing newer is queued, or the run was lost in a manager stop (RequirementLifecycle.recordRunEnd, .recordRunLost)',
  },
  // A reply or a related message reopens accepted work: a new run starts on the same session.
  done: { doing: 'a run starts again (RequirementLifecycle.markRunning)' },
  todo: {
    cancelled: 'withdrawn before it ever ran (RequirementLifecycle.withdraw, .cancel)',
    doing: 'its first run starts (RequirementLifecycle.markRunning)',
  },
  waiting_confirmation: {
    cancelled: 'a person cancels it (RequirementLifecycle.cancel)',
    doing: 'a run starts again: a reply, a start, a timer or a CI failure (RequirementLifecycle.markRunning)',
    done: 'a person confirms the work (RequirementLifecycle.confirm)',
  },
};

export const SESSION_TRANSITIONS: Readonly<Record<SessionState, Readonly<Partial<Record<SessionState, string>>>>> = {
  completed: { running: 'a done Requirement is reopened by a new run (RequirementLifecycle.markRunning)' },
  failed: {
    completed: 'its Requirement is confirmed or cancelled (RequirementLifecycle.confirm, .cancel)',
    running: 'a run starts again (RequirementLifecycle.markRunning)',
  },
  idle: {
    completed: 'its Requirement is cancelled before any run (RequirementLifecycle.cancel)',
    running: 'its first run starts (RequirementLifecycle.markRunning)',
  },
  running: {
    completed: 'its run ends after the Requirement was cancelled (RequirementLifecycle.recordRunEnd)',
    failed:
      'its run fails or times out, or is lost in a manager stop (RequirementLifecycle.recordRunEnd, .recordRunLost)',
    waiting_human: 'its run succeeds or is stopped, and nothing newer is queued (RequirementLifecycle.recordRunEnd)',
  },
  waiting_human: {
    completed: 'its Requirement is confirmed or cancelled (RequirementLifecycle.confirm, .cancel)',
    running: 'a run starts again (RequirementLifecycle.markRunning)',
  },
};

export function requirementTransitionAllowed(from: RequirementStatus, to: RequirementStatus): boolean {
  return from === to || REQUIREMENT_TRANSITIONS[from][to] !== undefined;
}

export function sessionTransitionAllowed(from: SessionState, to: SessionState): boolean {
  return from === to || SESSION_TRANSITIONS[from][to] !== undefined;
}

/** A change the tables do not allow: a defect in the caller, never the person's input. */
export class IllegalTransitionError extends Error {
  constructor(what: 'requirement status' | 'session state', id: string, from: string, to: string) {
    super(`illegal ${what} transition of ${id}: ${from} → ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

export function assertRequirementTransition(id: string, from: RequirementStatus, to: RequirementStatus): void {
  if (!requirementTransitionAllowed(from, to)) {
    throw new IllegalTransitionError('requirement status', id, from, to);
  }
}

export function assertSessionTransition(id: string, from: SessionState, to: SessionState): void {
  if (!sessionTransitionAllowed(from, to)) {
    throw new IllegalTransitionError('session state', id, from, to);
  }
}

/** Every status and state, for the spec that walks each pair. */
export const ALL_STATUSES = REQUIREMENT_STATUSES;
export const ALL_SESSION_STATES = SESSION_STATES;
