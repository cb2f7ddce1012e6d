import type { ManagerEvent, ManagerEventOf, ManagerEventType } from '@libs/contracts';

/** The committed events of a run's end, whatever its outcome. */
export const RUN_ENDS = [
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'run.timed_out',
] as const satisfies readonly ManagerEventType[];

type RunEnd = ManagerEventOf<(typeof RUN_ENDS)[number]>;

/** The run ends among `events` that the manager's own stop did not cause (those are no end to react to). */
function ends(events: readonly ManagerEvent[]): RunEnd[] {
  return events.filter(
    (event): event is RunEnd =>
      (RUN_ENDS as readonly string[]).includes(event.type) && (event as RunEnd).payload.managerStopped !== true,
  );
}

/** Each Requirement once, in the order its first event came. */
function requirementsOf(events: RunEnd[]): string[] {
  return [...new Set(events.map((event) => event.payload.requirement.id))];
}

/**
 * The Requirements whose RD run ended with no run continuing the session in the same commit (the
 * session is at rest): once each, in the order they ended. A run the manager's own stop cut short
 * is not an end to react to (its input waits for the next start, which runs it again). `runnerId`
 * (team mode) keeps only the Requirements that run on that runner.
 */
export function restingAfter(events: readonly ManagerEvent[], runnerId: string | null = null): string[] {
  return requirementsOf(
    ends(events).filter(
      ({ payload: { requirement, run } }) =>
        run.role === 'rd' &&
        requirement.session.state !== 'running' &&
        (runnerId === null || requirement.runner?.id === runnerId),
    ),
  );
}

/**
 * The Requirements one of whose reviewer runs ended (its review with it), not cut short by the
 * manager's stop: once each, in the order they ended. `runnerId` (team mode) keeps the
 * Requirements that run on that runner, and those no runner runs yet (a pull request registered
 * before any run: the loop's receipts keep two runners from reviewing one head twice).
 */
export function reviewsEndedAfter(events: readonly ManagerEvent[], runnerId: string | null = null): string[] {
  return requirementsOf(
    ends(events).filter(
      ({ payload: { requirement, run } }) =>
        run.role === 'reviewer' &&
        (runnerId === null || requirement.runner === null || requirement.runner.id === runnerId),
    ),
  );
}
