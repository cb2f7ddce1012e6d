export const EVENT_TYPES = [
  'manager.configuration.updated',
  'manager.reconciled',
  'message.created',
  'pull_request.created',
  'pull_request.updated',
  'requirement.completed',
  'requirement.created',
  'requirement.deleted',
  'requirement.updated',
  'requirements.purged',
  'run.cancelled',
  'run.failed',
  'run.started',
  'run.succeeded',
  'run.timed_out',
  'run.trace.appended',
] as const;
export type ManagerEventType = (typeof EVENT_TYPES)[number];
