import type { ManagerEvent } from '@libs/contracts';

import { restingAfter, reviewsEndedAfter } from './run-ends';

let nextId = 0;
function end(
  requirementId: string,
  {
    role = 'rd',
    state = 'waiting_human',
    runner = null,
    managerStopped,
    type = 'run.succeeded',
  }: {
    role?: 'rd' | 'reviewer';
    state?: string;
    runner?: string | null;
    managerStopped?: true;
    type?: ManagerEvent['type'];
  } = {},
): ManagerEvent {
  nextId += 1;
  return {
    id: nextId,
    payload: {
      requirement: { id: requirementId, runner: runner === null ? null : { id: runner }, session: { state } },
      run: { role },
      ...(managerStopped ? { managerStopped } : {}),
    },
    requirementId,
    type,
  } as unknown as ManagerEvent;
}

describe('run ends', () => {
  it('names each Requirement whose RD run left its session at rest, once, in order', () => {
    expect(
      restingAfter([
        end('b'),
        end('a', { type: 'run.failed', state: 'failed' }),
        end('b', { type: 'run.cancelled' }),
        end('c', { state: 'running' }), // a run continues it at once
        end('d', { role: 'reviewer' }),
        { id: 99, payload: {}, requirementId: 'e', type: 'message.created' } as unknown as ManagerEvent,
      ]),
    ).toEqual(['b', 'a']);
  });

  it("leaves out a run the manager's own stop cut short, and in team mode the runs of other runners", () => {
    expect(restingAfter([end('a', { managerStopped: true }), end('b')])).toEqual(['b']);
    expect(restingAfter([end('a', { runner: 'r1' }), end('b', { runner: 'r2' })], 'r1')).toEqual(['a']);
  });

  it('names the Requirements whose reviewer run ended, also those no runner runs yet', () => {
    expect(
      reviewsEndedAfter(
        [
          end('a', { role: 'reviewer', runner: 'r1' }),
          end('b', { role: 'reviewer', runner: 'r2' }),
          end('c', { role: 'reviewer' }),
          end('d', { role: 'reviewer', managerStopped: true }),
          end('e'),
        ],
        'r1',
      ),
    ).toEqual(['a', 'c']);
  });
});
