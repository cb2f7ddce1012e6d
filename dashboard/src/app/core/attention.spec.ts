import { attentionOf, firstLine } from './attention';
import { sumUsage, usageWindows } from './stores/usage-store';
import { T0, requirement, run } from '../../testing/builders';

describe('attentionOf', () => {
  const waiting = requirement('req_w', T0, 'waiting_confirmation');

  it('says why a waiting Requirement needs a person: a failure, a pause with input, or work to confirm', () => {
    expect(attentionOf({ ...waiting, session: { ...waiting.session, lastError: 'boom', state: 'failed' } })).toBe(
      'failed',
    );
    expect(
      attentionOf({
        ...waiting,
        session: { ...waiting.session, pausedAt: T0, pendingMessageCount: 2, state: 'waiting_human' },
      }),
    ).toBe('paused');
    expect(
      attentionOf({
        ...waiting,
        session: { ...waiting.session, pausedAt: T0, pendingMessageCount: 0, state: 'waiting_human' },
      }),
    ).toBe('confirm');
    expect(attentionOf({ ...waiting, session: { ...waiting.session, state: 'waiting_human' } })).toBe('confirm');
  });

  it('counts a Requirement whose budget was reached, with or without pending input (only a person lifts it)', () => {
    const paused = { ...waiting.session, pausedAt: T0, state: 'waiting_human' as const };
    expect(attentionOf({ ...waiting, budgetReachedAt: T0, session: { ...paused, pendingMessageCount: 1 } })).toBe(
      'budget',
    );
    expect(attentionOf({ ...waiting, budgetReachedAt: T0, session: { ...paused, pendingMessageCount: 0 } })).toBe(
      'budget',
    );
    expect(attentionOf({ ...requirement('req_d', T0, 'doing'), budgetReachedAt: T0 })).toBeNull();
  });

  it('leaves everything else alone', () => {
    for (const status of ['todo', 'doing', 'done', 'cancelled'] as const) {
      expect(attentionOf(requirement('req_x', T0, status))).toBeNull();
    }
  });

  it('shortens an error to its first line', () => {
    expect(firstLine('first\nsecond')).toBe('first');
    expect(firstLine('x'.repeat(200), 10)).toBe(`${'x'.repeat(9)}…`);
    expect(firstLine(null)).toBe('');
  });
});

describe('usage', () => {
  it('sums tokens over runs, and a cost only over the runs that reported one', () => {
    const a = { ...run('run_a', 'req_a', T0), cachedInputTokens: 5, inputTokens: 100, outputTokens: 10 };
    const b = { ...run('run_b', 'req_a', T0), costUsd: 0.25, inputTokens: 50, outputTokens: 5 };
    expect(sumUsage([a, b])).toEqual({
      cachedInputTokens: 5,
      costReportedRuns: 1,
      costUsd: 0.25,
      inputTokens: 150,
      outputTokens: 15,
      runs: 2,
    });
    expect(sumUsage([a]).costUsd).toBeNull();
  });

  it('starts today at local midnight and the week on the local Monday', () => {
    const { today, week } = usageWindows(new Date(2026, 11, 3, 15, 30)); // a Thursday
    expect(new Date(today).getDate()).toBe(3);
    expect(new Date(today).getHours()).toBe(0);
    expect(new Date(week).getDay()).toBe(1);
    expect(new Date(week).getDate()).toBe(30); // Monday 30 November
  });
});
