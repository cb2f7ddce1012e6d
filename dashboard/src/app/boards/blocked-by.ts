import type { Requirement } from '../core/api-types';

/**
 * The card's "blocked by": the titles (or ids, when not loaded) of the dependencies still
 * pending, or null when nothing blocks the Requirement. Met and cancelled ones do not block.
 */
export function blockedBy(
  requirement: Pick<Requirement, 'dependsOn'>,
  titleOf: (id: string) => string | undefined,
): string | null {
  const pending = (requirement.dependsOn ?? []).filter((d) => d.state === 'pending');
  return pending.length === 0 ? null : pending.map((d) => titleOf(d.requirementId) ?? d.requirementId).join(', ');
}
