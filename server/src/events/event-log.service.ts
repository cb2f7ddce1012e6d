import { Injectable } from '@nestjs/common';

import type { EventActor, ManagerEvent, ManagerEventOf, ManagerEventPayloads, ManagerEventType } from '@libs/contracts';

import { Clock } from '../core/clock';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { ManagerEventEntity } from './manager-event.entity';

export interface NewEvent<T extends ManagerEventType> {
  type: T;
  actor: EventActor;
  requirementId?: string | null;
  sessionId?: string | null;
  runId?: string | null;
  payload: ManagerEventPayloads[T];
}

export const SYSTEM_ACTOR: EventActor = { id: null, kind: 'system' };
export const HUMAN_ACTOR: EventActor = { id: null, kind: 'human' };

/** Appends ManagerEvents inside the caller's write transaction (invariant 9). */
@Injectable()
export class EventLog {
  constructor(private readonly clock: Clock) {}

  append<T extends ManagerEventType>(tx: UnitOfWork, input: NewEvent<T>): Promise<ManagerEventOf<T>> {
    // The unit of work gives the id and writes the event with its transaction.
    const event = tx.appendEvent<T>({
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
  // The row was written from a typed event of its type (append above), so its payload is that
  // type's: the one place a payload's type is asserted rather than checked, at the store's edge.
  return {
    actor: actorOf(row),
    createdAt: row.createdAt,
    id: row.id,
    payload: JSON.parse(row.payload) as ManagerEventPayloads[typeof row.type],
    requirementId: row.requirementId,
    runId: row.runId,
    sessionId: row.sessionId,
    type: row.type,
  } as ManagerEvent;
}

/** A stored event's actor: a person's name and email only where the event recorded them. */
function actorOf(row: ManagerEventEntity): EventActor {
  const actor: EventActor = { id: row.actorId, kind: row.actorKind };
  if (row.actorName !== null && row.actorName !== undefined) {
    actor.name = row.actorName;
    actor.email = row.actorEmail ?? null;
  }
  return actor;
}

/** Who did it, for log lines (the audit trail): kind, run/trigger/person ID and a person's name, never a secret. */
export function audit(actor: EventActor): { actor: string; actorId: string | null; actorName?: string } {
  return actor.name
    ? { actor: actor.kind, actorId: actor.id, actorName: actor.name }
    : { actor: actor.kind, actorId: actor.id };
}
