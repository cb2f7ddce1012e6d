import { en } from './i18n-messages';
import type { PullRequest } from './api-types';
import { autoReviewBadge } from './reviews';

const pr = (autoReview: Partial<PullRequest['autoReview']>): PullRequest =>
  ({
    autoReview: {
      headSha: null,
      lastOutcome: null,
      maxRounds: 3,
      provider: 'claude-code',
      round: 0,
      state: 'off',
      ...autoReview,
    },
  }) as PullRequest;

const text = (badge: ReturnType<typeof autoReviewBadge>) =>
  badge && Object.entries(badge.params).reduce<string>((t, [k, v]) => t.replace(`{${k}}`, String(v)), en[badge.key]);

describe(autoReviewBadge.name, () => {
  it('says nothing while the loop is off', () => {
    expect(autoReviewBadge(pr({}))).toBeNull();
  });

  it('names the round of how many while the loop runs, and how it ended', () => {
    expect(text(autoReviewBadge(pr({ round: 2, state: 'reviewing' })))).toBe('Auto review round 2/3');
    expect(text(autoReviewBadge(pr({ round: 1, state: 'waiting_for_push' })))).toBe(
      'Auto review round 1/3: waiting for a push',
    );
    expect(text(autoReviewBadge(pr({ round: 3, state: 'clean' })))).toBe('clean after 3 rounds');
    expect(autoReviewBadge(pr({ round: 3, state: 'clean' }))?.ok).toBe(true);
    expect(text(autoReviewBadge(pr({ round: 3, state: 'max_rounds' })))).toBe('Auto review stopped at 3/3 rounds');
  });
});
