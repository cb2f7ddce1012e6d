import { nextCrashCount, restartDelayMs } from './backoff';

describe('restart backoff', () => {
  it('doubles from 1 s and stops at 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(restartDelayMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('counts crashes in a row, and starts over after 30 s up', () => {
    expect(nextCrashCount(0, 100)).toBe(1);
    expect(nextCrashCount(3, 29_999)).toBe(4);
    expect(nextCrashCount(5, 30_000)).toBe(1);
  });
});
