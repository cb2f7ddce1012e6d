/** A manager healthy at least this long before it crashed starts the backoff over. */
export const BACKOFF_RESET_AFTER_MS = 30_000;
const BACKOFF_MAX_MS = 30_000;
const BACKOFF_BASE_MS = 1_000;

/** Delay before the n-th consecutive restart (n ≥ 1): min(30 s, 1 s·2^(n−1)). */
export function restartDelayMs(consecutiveCrashes: number): number {
  const n = Math.max(1, consecutiveCrashes);
  // 2^(n−1) overflows nothing that matters: the cap is reached at n = 6.
  return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(n - 1, 16));
}

/** The consecutive-crash count after a crash of a manager that had been healthy `uptimeMs`. */
export function nextCrashCount(previous: number, uptimeMs: number): number {
  return uptimeMs >= BACKOFF_RESET_AFTER_MS ? 1 : previous + 1;
}
