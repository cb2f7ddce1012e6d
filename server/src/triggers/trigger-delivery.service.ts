import { Injectable, Logger } from '@nestjs/common';

import { TERMINAL_REQUIREMENT_STATUSES } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { MessageResponseDto } from '../messages/dto/message-response.dto';
import { MessagesService } from '../messages/messages.service';
import type { RequirementRows } from '../requirements/requirements.repository';
import { ConversationDelivery } from '../conversation/conversation-delivery.service';
import type { TriggerDelivery } from './agent-trigger';
import { TriggerReceiptsRepository } from './trigger-receipts.repository';

/** Hooks a trigger can run inside the delivery's write unit. */
export interface DeliveryHooks {
  /** Runs first; false abandons the delivery (nothing written), e.g. a timer cancelled meanwhile. */
  guard?(tx: UnitOfWork, rows: RequirementRows): Promise<boolean>;
  /**
   * After the guard: false keeps a deliverable message waiting for the next run instead of
   * waking the session for it (the agent reads it when something else starts it).
   */
  wakes?(tx: UnitOfWork, rows: RequirementRows): Promise<boolean>;
  /** Runs last, in the same transaction: the trigger's own bookkeeping (even for a duplicate). */
  alsoWrite?(tx: UnitOfWork, rows: RequirementRows, message: MessageResponseDto | null): Promise<void>;
}

export type DeliveryOutcome =
  | { status: 'delivered' | 'recorded'; message: MessageResponseDto }
  | { status: 'duplicate' | 'skipped'; message: null };

/**
 * The one delivery path for trigger occurrences: receipt, message and event in one
 * transaction, then the session is woken through ConversationDelivery (invariant 10). An
 * occurrence whose receipt exists was delivered before — perhaps before a restart — and is
 * dropped. A done or cancelled Requirement keeps the message for display without waking.
 */
@Injectable()
export class TriggerDeliveryService {
  private readonly logger = new Logger(TriggerDeliveryService.name);

  constructor(
    private readonly clock: Clock,
    private readonly conversation: ConversationDelivery,
    private readonly database: Database,
    private readonly messages: MessagesService,
    private readonly receipts: TriggerReceiptsRepository,
  ) {}

  /** Receipt keys of a Requirement starting with `prefix`: lets a trigger skip what it delivered before without a write. */
  seenKeys(requirementId: string, prefix: string): Promise<Set<string>> {
    return this.receipts.keysWithPrefix(requirementId, prefix);
  }

  /**
   * Records occurrences as seen without delivering them: a trigger's baseline (what already
   * existed when it started watching), so history is never replayed into the conversation.
   */
  async recordSeen(
    requirementId: string,
    occurrences: ReadonlyArray<{ triggerId: string; receiptKey: string }>,
  ): Promise<void> {
    if (occurrences.length === 0) {
      return;
    }
    await this.database.write(async (tx) => {
      const now = this.clock.nowIso();
      for (const { receiptKey, triggerId } of occurrences) {
        this.receipts.insertIfAbsent(tx, { createdAt: now, messageId: null, receiptKey, requirementId, triggerId });
      }
    });
  }

  /**
   * Takes an occurrence's receipt inside the caller's unit when it has none yet: true the first
   * time, false ever after (across restarts), for a trigger whose effect is not a message of
   * its own (the review loop's one review per PR head).
   */
  async claimIn(
    tx: UnitOfWork,
    occurrence: { triggerId: string; receiptKey: string; requirementId: string },
  ): Promise<boolean> {
    if (await this.receipts.existsIn(tx, occurrence.triggerId, occurrence.receiptKey)) {
      return false;
    }
    this.receipts.insert(tx, { ...occurrence, createdAt: this.clock.nowIso(), messageId: null });
    return true;
  }

  async deliver(delivery: TriggerDelivery, hooks: DeliveryHooks = {}): Promise<DeliveryOutcome> {
    const actor = { id: delivery.triggerId, kind: 'trigger' as const };
    let outcome: DeliveryOutcome = { message: null, status: 'skipped' };
    await this.conversation.deliver(
      delivery.requirementId,
      async (tx, rows) => {
        outcome = { message: null, status: 'skipped' };
        if (hooks.guard && !(await hooks.guard(tx, rows))) {
          return null;
        }
        // Reads flush what this batch staged, so a receipt written by an earlier unit of the same batch counts.
        if (await this.receipts.existsIn(tx, delivery.triggerId, delivery.receiptKey)) {
          outcome = { message: null, status: 'duplicate' };
          await hooks.alsoWrite?.(tx, rows, null);
          return null;
        }
        const active = !TERMINAL_REQUIREMENT_STATUSES.includes(rows.requirement.status);
        const deliverToRd = active && delivery.deliverToRd !== false;
        const wake = deliverToRd && (hooks.wakes ? await hooks.wakes(tx, rows) : true);
        if (wake && this.conversation.stopping) {
          // It could not wake the agent now, and nothing would later: leave it unreceipted (the
          // timer due, the GitHub change unseen) so the next start delivers it.
          throw new Error('Agent Manager is stopping; the occurrence is delivered at the next start');
        }
        const { message } = await this.messages.append(
          tx,
          rows,
          {
            args: delivery.args ?? null,
            author: delivery.author,
            body: delivery.body,
            code: delivery.code ?? null,
            deliverToRd,
            metadata: delivery.metadata,
            source: delivery.source,
            triggerId: delivery.triggerId,
          },
          actor,
        );
        this.receipts.insert(tx, {
          createdAt: message.createdAt,
          messageId: message.id,
          receiptKey: delivery.receiptKey,
          requirementId: delivery.requirementId,
          triggerId: delivery.triggerId,
        });
        await hooks.alsoWrite?.(tx, rows, message);
        outcome = { message, status: deliverToRd ? 'delivered' : 'recorded' };
        return { message, wake };
      },
      actor,
    );
    if (outcome.status !== 'skipped') {
      this.logger.log({
        msg: `trigger ${outcome.status}`,
        receiptKey: delivery.receiptKey,
        requirementId: delivery.requirementId,
        triggerId: delivery.triggerId,
      });
    }
    return outcome;
  }
}
