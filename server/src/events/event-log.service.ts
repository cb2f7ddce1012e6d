import { Injectable } from '@nestjs/common';

import type { EventActor, ManagerEvent, ManagerEventType } from '@libs/contracts';

import { Clock } from '../core/clock';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { ManagerEventEntity } from './manager-event.entity';

export interface NewEvent<P> {
  type: ManagerEventType;
  actor: EventActor;
  requirementId?: string | null;
  sessionId?: string | null;
  runId?: string | null;
  payload: P;
}

export const SYSTEM_ACTOR: EventActor = { id: null, kind: 'system' };
export const HUMAN_ACTOR: EventActor = { id: null, kind: 'human' };

/** Appends ManagerEvents inside the caller's write transaction (architecture §3.9). */
@Injectable()
export class EventLog {
  constructor(private readonly clock: Clock) {}

  append<P extends object>(tx: UnitOfWork, input: NewEvent<P>): Promise<ManagerEvent<P>> {
    // The unit of work gives the id and writes the event with its transaction.
    const event = tx.appendEvent<P>({
      actor: input.actor,
      createdAt: this.clock.nowIso(),
      payload: input.payload,
      requirementId: input.requirementId ?? null,
      runId: input.runId ?? null,
      sessionId: input.sessionId ?? null,
      type: input.type,
    });
    return Promise.resolve(event);
  }
}

/** Rebuilds the wire shape of a stored event (used by replay). */
export function toManagerEvent(row: ManagerEventEntity): ManagerEvent {
  return {
    actor: { id: row.actorId, kind: row.actorKind },
    createdAt: row.createdAt,
    id: row.id,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    requirementId: row.requirementId,
    runId: row.runId,
    sessionId: row.sessionId,
    type: row.type,
  };
}

/** Who did it, for log lines (the audit trail): kind and run/trigger ID, never a secret. */
export function audit(actor: EventActor): { actor: string; actorId: string | null } {
  return { actor: actor.kind, actorId: actor.id };
}
