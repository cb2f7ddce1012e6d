import type { ManagerEvent, ManagerEventType } from '@libs/contracts';

/** The committed events of a run's end, whatever its outcome. */
export const RUN_ENDS = [
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'run.timed_out',
] as const satisfies readonly ManagerEventType[];

/**
 * The Requirements whose RD run ended with no run continuing the session in the same commit (the
 * session is at rest): once each, in the order they ended. A run the manager's own stop cut short
 * is not an end to react to (its input waits for the next start, which runs it again). `runnerId`
 * (team mode) keeps only the Requirements that run on that runner.
 */
export function restingAfter(events: readonly ManagerEvent[], runnerId: string | null = null): string[] {
  const ids: string[] = [];
  for (const event of events) {
    if (
      (event.type === 'run.succeeded' ||
        event.type === 'run.failed' ||
        event.type === 'run.cancelled' ||
        event.type === 'run.timed_out') &&
      event.payload.run.role === 'rd' &&
      event.payload.managerStopped !== true &&
      event.payload.requirement.session.state !== 'running' &&
      (runnerId === null || event.payload.requirement.runner?.id === runnerId) &&
      !ids.includes(event.payload.requirement.id)
    ) {
      ids.push(event.payload.requirement.id);
    }
  }
  return ids;
}

/**
 * The Requirements one of whose reviewer runs ended (its review with it), not cut short by the
 * manager's stop: once each, in the order they ended. `runnerId` (team mode) keeps the
 * Requirements that run on that runner, and those no runner runs yet (a pull request registered
 * before any run: the loop's receipts keep two runners from reviewing one head twice).
 */
export function reviewsEndedAfter(events: readonly ManagerEvent[], runnerId: string | null = null): string[] {
  const ids: string[] = [];
  for (const event of events) {
    if (
      (event.type === 'run.succeeded' ||
        event.type === 'run.failed' ||
        event.type === 'run.cancelled' ||
        event.type === 'run.timed_out') &&
      event.payload.run.role === 'reviewer' &&
      event.payload.managerStopped !== true &&
      (runnerId === null ||
        event.payload.requirement.runner === null ||
        event.payload.requirement.runner.id === runnerId) &&
      !ids.includes(event.payload.requirement.id)
    ) {
      ids.push(event.payload.requirement.id);
    }
  }
  return ids;
}
