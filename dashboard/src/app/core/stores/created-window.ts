/** Created-time windows of the board filter, in days (null: all time). */
export const CREATED_WINDOWS = { '24h': 1, '7d': 7, '30d': 30, '90d': 90, all: null } as const;
export type CreatedWindow = keyof typeof CREATED_WINDOWS;

export const cutoffFor = (window: CreatedWindow, now = Date.now()): string | null => {
  const days = CREATED_WINDOWS[window];
  return days === null ? null : new Date(now - days * 86_400_000).toISOString();
};

/** True when `createdAt` falls in the board's created-time window. */
export function inWindow(createdAt: string, window: CreatedWindow): boolean {
  const cutoff = cutoffFor(window);
  return cutoff === null || createdAt >= cutoff;
}
