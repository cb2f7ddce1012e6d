import type { ManagerEvent, ManagerEventType } from '@libs/contracts';

/**
 * The one durable way for a feature to react to what another one committed: a method marked
 * `@OnCommitted(types)` is handed the committed events of those types, in id order, a batch at a
 * time, after their commit (docs/architecture.md, "Reactions"). Each reaction keeps a cursor in
 * the store, so what it had not finished when the process died is handed to it again at the next
 * start: delivery is at least once, and a reaction must be idempotent (a pass that looks at the
 * current state, a receipt keyed by what it answers).
 *
 * Batches are handed over as they commit, without waiting for the previous call to finish (a
 * reaction that asks for a pass folds the calls into its running pass); the cursor moves past a
 * batch only once that call and every earlier one resolved. A call that throws is retried with
 * backoff from the cursor, and shows in `GET /api/system/reactions`.
 *
 * `order` (default 0, then the reaction's name) is the order in which the reactions to one event
 * are called: a lower one's call starts first.
 */
export function OnCommitted(types: readonly ManagerEventType[], options: { order?: number } = {}) {
  return <M extends CommittedHandler>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<M>) => {
    const marks = (Reflect.getOwnMetadata(REACTION, target, key) as ReactionMark[] | undefined) ?? [];
    Reflect.defineMetadata(REACTION, [...marks, { order: options.order ?? 0, types: [...types] }], target, key);
    void descriptor;
  };
}

export type CommittedHandler = (events: ManagerEvent[]) => Promise<void>;

export interface ReactionMark {
  types: ManagerEventType[];
  order: number;
}

export const REACTION = Symbol('committed-reaction');
