import type { UnitOfWork } from '../core/database/unit-of-work';
import type { AgentSessionEntity } from './agent-session.entity';
import type { DependenciesRepository } from './dependencies.repository';
import { RequirementLifecycle } from './requirement-lifecycle';
import { assertRequirementTransition, assertSessionTransition } from './requirement-state';
import type { RequirementEntity } from './requirement.entity';
import type { RequirementRows, RequirementsRepository } from './requirements.repository';

const NOW = '2026-12-02T05:00:00.000Z';
const tx = {} as UnitOfWork;

/**
 * The repository's change calls, recorded (and checked against the state table as the real one
 * checks them): what each intent stages is the exact set of columns the callers staged before
 * RequirementLifecycle owned these writes (issue 27 §1 changes who writes, not what is written).
 */
function recordingRepository() {
  const staged: Array<[string, Record<string, unknown>]> = [];
  const repository = {
    changeRequirement: (_tx: UnitOfWork, requirement: RequirementEntity, set: Partial<RequirementEntity>) => {
      if (set.status !== undefined) {
        assertRequirementTransition(requirement.id, requirement.status, set.status);
      }
      Object.assign(requirement, set);
      staged.push(['requirement', set]);
    },
    changeSession: (_tx: UnitOfWork, session: AgentSessionEntity, set: Partial<AgentSessionEntity>) => {
      if (set.state !== undefined) {
        assertSessionTransition(session.id, session.state, set.state);
      }
      Object.assign(session, set);
      staged.push(['session', set]);
    },
    delete: (_tx: UnitOfWork, ids: string[]) => staged.push(['delete', { ids }]),
    insert: (_tx: UnitOfWork, rows: RequirementRows) => staged.push(['insert', { id: rows.requirement.id }]),
  };
  return {
    staged,
    sut: new RequirementLifecycle(repository as unknown as RequirementsRepository, {} as DependenciesRepository),
  };
}

function rows(
  status: RequirementEntity['status'],
  state: AgentSessionEntity['state'],
  session: Partial<AgentSessionEntity> = {},
): RequirementRows {
  return {
    requirement: { id: 'req_1', status } as RequirementEntity,
    session: {
      id: 'ses_1',
      lastConsumedMessageSequence: 0,
      lastMessageSequence: 4,
      pendingMessageCount: 2,
      state,
      ...session,
    } as AgentSessionEntity,
  };
}

describe(RequirementLifecycle.name, () => {
  it('markRunning: doing and running, the pause and the completion cleared', () => {
    const { staged, sut } = recordingRepository();
    sut.markRunning(tx, rows('waiting_confirmation', 'waiting_human'), NOW);
    expect(staged).toEqual([
      ['requirement', { budgetReachedAt: null, completedAt: null, status: 'doing', updatedAt: NOW }],
      ['session', { pausedAt: null, state: 'running', updatedAt: NOW }],
    ]);
  });

  it('recordRunEnd: a succeeded run that continues consumes its input and leaves the status', () => {
    const { staged, sut } = recordingRepository();
    sut.recordRunEnd(
      tx,
      rows('doing', 'running'),
      { consumed: { pending: 1, toSequence: 3 }, next: 'continues', paused: false },
      NOW,
    );
    expect(staged).toEqual([
      ['session', { lastConsumedMessageSequence: 3, lastError: null, pendingMessageCount: 1, updatedAt: NOW }],
    ]);
  });

  it('recordRunEnd: a run that rests makes the Requirement wait for confirmation', () => {
    const { staged, sut } = recordingRepository();
    sut.recordRunEnd(
      tx,
      rows('doing', 'running'),
      { consumed: { pending: 0, toSequence: 4 }, next: 'waiting_human', paused: false },
      NOW,
    );
    expect(staged).toEqual([
      ['requirement', { status: 'waiting_confirmation', updatedAt: NOW }],
      [
        'session',
        {
          lastConsumedMessageSequence: 4,
          lastError: null,
          pendingMessageCount: 0,
          state: 'waiting_human',
          updatedAt: NOW,
        },
      ],
    ]);
  });

  it('recordRunEnd: a stopped, failed run pauses; a cancelled Requirement completes its session unpaused', () => {
    const stopped = recordingRepository();
    stopped.sut.recordRunEnd(tx, rows('doing', 'running'), { consumed: null, next: 'failed', paused: true }, NOW);
    expect(stopped.staged).toEqual([
      ['requirement', { status: 'waiting_confirmation', updatedAt: NOW }],
      ['session', { pausedAt: NOW, state: 'failed', updatedAt: NOW }],
    ]);
    const cancelled = recordingRepository();
    cancelled.sut.recordRunEnd(
      tx,
      rows('cancelled', 'running'),
      { consumed: null, next: 'completed', paused: true },
      NOW,
    );
    expect(cancelled.staged).toEqual([['session', { pausedAt: null, state: 'completed', updatedAt: NOW }]]);
  });

  it('recordRunLost: the session fails; only a doing Requirement waits for confirmation', () => {
    const doing = recordingRepository();
    doing.sut.recordRunLost(tx, rows('doing', 'running'), 'lost', NOW);
    expect(doing.staged).toEqual([
      ['session', { lastError: 'lost', state: 'failed', updatedAt: NOW }],
      ['requirement', { status: 'waiting_confirmation', updatedAt: NOW }],
    ]);
    const cancelled = recordingRepository();
    cancelled.sut.recordRunLost(tx, rows('cancelled', 'running'), 'lost', NOW);
    expect(cancelled.staged).toEqual([['session', { lastError: 'lost', state: 'failed', updatedAt: NOW }]]);
  });

  it('recordMessage: the next sequence, one more pending only when the agent gets it', () => {
    const { staged, sut } = recordingRepository();
    const held = rows('doing', 'running');
    expect(sut.recordMessage(tx, held.session, true, NOW)).toBe(5);
    expect(sut.recordMessage(tx, held.session, false, NOW)).toBe(6);
    expect(staged).toEqual([
      ['session', { lastMessageSequence: 5, pendingMessageCount: 3, updatedAt: NOW }],
      ['session', { lastMessageSequence: 6, pendingMessageCount: 3, updatedAt: NOW }],
    ]);
  });

  it('pauseOnBudget and resumeFromBudget: budgetReachedAt and the session pause together', () => {
    const { staged, sut } = recordingRepository();
    const held = rows('waiting_confirmation', 'waiting_human');
    sut.pauseOnBudget(tx, held, NOW);
    sut.resumeFromBudget(tx, held, NOW);
    expect(staged).toEqual([
      ['requirement', { budgetReachedAt: NOW, updatedAt: NOW }],
      ['session', { pausedAt: NOW, updatedAt: NOW }],
      ['requirement', { budgetReachedAt: null, updatedAt: NOW }],
      ['session', { pausedAt: null, updatedAt: NOW }],
    ]);
  });

  it('confirm, cancel and withdraw: the closing transitions of the table', () => {
    const confirmed = recordingRepository();
    confirmed.sut.confirm(tx, rows('waiting_confirmation', 'waiting_human'), NOW);
    expect(confirmed.staged).toEqual([
      ['requirement', { budgetReachedAt: null, completedAt: NOW, status: 'done', updatedAt: NOW }],
      ['session', { pausedAt: null, state: 'completed', updatedAt: NOW }],
    ]);
    const running = recordingRepository();
    running.sut.cancel(tx, rows('doing', 'running'), true, NOW);
    expect(running.staged).toEqual([['requirement', { status: 'cancelled', updatedAt: NOW }]]);
    const idle = recordingRepository();
    idle.sut.cancel(tx, rows('waiting_confirmation', 'failed'), false, NOW);
    expect(idle.staged).toEqual([
      ['requirement', { status: 'cancelled', updatedAt: NOW }],
      ['session', { pausedAt: null, state: 'completed', updatedAt: NOW }],
    ]);
    const todo = recordingRepository();
    todo.sut.withdraw(tx, rows('todo', 'idle').requirement, NOW);
    expect(todo.staged).toEqual([['requirement', { status: 'cancelled', updatedAt: NOW }]]);
  });

  it('refuses, as the table does, a transition no intent may make (a done Requirement cannot wait for confirmation)', () => {
    const { sut } = recordingRepository();
    expect(() =>
      sut.recordRunEnd(tx, rows('done', 'running'), { consumed: null, next: 'waiting_human', paused: false }, NOW),
    ).toThrow(/illegal requirement status transition/);
  });
});
