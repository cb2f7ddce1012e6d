import type { MessageAuthor, SystemMessageArgs, SystemMessageCode } from '@libs/contracts';

/**
 * The extension boundary for whatever wakes an agent from outside (docs/architecture.md#triggers-and-forges). A trigger
 * owns its source — a schedule, a poll, a webhook — and hands each occurrence to
 * `TriggerDeliveryService.deliver` as one of these.
 */
export interface TriggerDelivery {
  /** Stable trigger name, e.g. `timer` or `github.pull-request.comment`; also the message's `triggerId`. */
  triggerId: string;
  /** Identifies the occurrence within the trigger: delivered at most once, across restarts. */
  receiptKey: string;
  requirementId: string;
  author: MessageAuthor;
  body: string;
  /** Where it came from (`timer`, `github`): the message's `source`. */
  source: string;
  /** Stored on the message and carried by its `message.created` event. */
  metadata: Record<string, unknown>;
  /** On the manager's own (system) text: what `body` says as a code and its arguments (issue 26 §13). */
  code?: SystemMessageCode;
  args?: SystemMessageArgs;
  /**
   * False records the message without delivering it to the agent (for example the agent's
   * own comments coming back from GitHub). Terminal Requirements never get deliveries.
   */
  deliverToRd?: boolean;
}
