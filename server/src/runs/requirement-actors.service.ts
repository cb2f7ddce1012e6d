import { Injectable } from '@nestjs/common';

/**
 * One logical actor per Requirement (docs/architecture.md#runs-and-agents): start, reply, delivery, interrupt and
 * finish for a Requirement run one after another, so they never race; different Requirements
 * run concurrently. A decision that fails does not block the ones queued after it.
 */
@Injectable()
export class RequirementActors {
  private readonly queues = new Map<string, Promise<unknown>>();

  /** Runs `decision` once every earlier decision for this Requirement has settled. */
  act<T>(requirementId: string, decision: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(requirementId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(decision);
    const settled = next.catch(() => undefined);
    this.queues.set(requirementId, settled);
    void settled.then(() => {
      // Drop the tail once idle, so the map holds only Requirements with work in flight.
      if (this.queues.get(requirementId) === settled) {
        this.queues.delete(requirementId);
      }
    });
    return next;
  }
}
