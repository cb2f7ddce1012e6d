export const EVENT_TYPES = [
  'manager.configuration.updated',
  'manager.reconciled',
  'message.created',
  'requirement.completed',
  'requirement.created',
  'requirement.deleted',
  'requirement.updated',
  'requirements.purged',
] as const;
export type ManagerEventType = (typeof EVENT_TYPES)[number];
