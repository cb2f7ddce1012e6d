import { blockedBy } from './blocked-by';

const dependency = (requirementId: string, state: 'pending' | 'met' | 'cancelled') => ({
  reason: null,
  requirementId,
  resolvedAt: null,
  state,
  until: 'merged' as const,
});

describe(blockedBy.name, () => {
  const titles = new Map([['req_a', 'Ship the API']]);
  const titleOf = (id: string) => titles.get(id);

  it('names the pending dependencies, by title where known', () => {
    expect(blockedBy({ dependsOn: [dependency('req_a', 'pending'), dependency('req_b', 'pending')] }, titleOf)).toBe(
      'Ship the API, req_b',
    );
  });

  it('is null once nothing is pending (met or cancelled), and without dependencies', () => {
    expect(
      blockedBy({ dependsOn: [dependency('req_a', 'met'), dependency('req_b', 'cancelled')] }, titleOf),
    ).toBeNull();
    expect(blockedBy({}, titleOf)).toBeNull();
  });
});
