import { createHmac } from 'node:crypto';

import type { AttentionReason, NotificationChannel, NotificationDeliveryItem } from '@libs/contracts';

/** What one message is, for whichever channel: an HTTP request, or a desktop notification. */
export type OutgoingMessage =
  | { kind: 'http'; url: string; headers: Record<string, string>; body: string }
  | { kind: 'desktop'; title: string; body: string };

/** The reason in words, as the person reads it (the dashboard's English labels). */
export const REASON_WORDS: Record<AttentionReason, string> = {
  budget_reached: 'Budget reached',
  ci_failed: 'CI failed',
  confirm_done: 'Confirm done',
  conflict: 'Conflict',
  dependency_cancelled: 'Dependency cancelled',
  land_refused: 'Land refused',
  network_blocked: 'Network blocked',
  queue_blocked: 'Merge queue waits',
  review_ready: 'Ready for review',
  run_failed: 'Run failed',
  runner_offline: 'Runner offline',
  waiting_reply: 'Asks you',
};

/** ntfy's priorities (1–5): what stopped is high, what waits default, what is done low. */
const NTFY_PRIORITY: Record<AttentionReason, number> = {
  budget_reached: 4,
  ci_failed: 4,
  confirm_done: 2,
  conflict: 3,
  dependency_cancelled: 3,
  land_refused: 4,
  network_blocked: 3,
  queue_blocked: 3,
  review_ready: 3,
  run_failed: 4,
  runner_offline: 4,
  waiting_reply: 4,
};

/** Items a Slack message shows as blocks (Slack takes at most 50 blocks). */
const SLACK_ITEMS = 45;

/** One line per item: "Asks you — Title: summary". */
function line(item: NotificationDeliveryItem): string {
  return `${REASON_WORDS[item.reason]} — ${item.requirement.title}: ${item.summary}`;
}

function headline(items: readonly NotificationDeliveryItem[]): string {
  const [first] = items;
  return items.length === 1 && first
    ? `Needs you: ${REASON_WORDS[first.reason]} — ${first.requirement.title}`
    : `Needs you: ${items.length} items`;
}

/**
 * A delivery as its channel's message. `webhook`: our JSON (`{id, items}`, and the first item's
 * fields at the top for a one-item message), signed over `<timestamp>.<body>` when a secret is
 * set. `slack`: an incoming-webhook message (text for notifications, blocks with a button per
 * item). `ntfy`: a publish to the topic URL (title, message, click link, priority by reason).
 */
export function messageFor(
  channel: NotificationChannel,
  delivery: { id: string; items: NotificationDeliveryItem[] },
  secret: string | null,
  timestamp: number,
): OutgoingMessage {
  const { items } = delivery;
  const [first] = items;
  const text = items.map(line).join('\n');
  switch (channel.kind) {
    case 'desktop':
      return { body: text, kind: 'desktop', title: headline(items) };
    case 'slack':
      return {
        body: JSON.stringify({
          // Slack takes at most 50 blocks: past SLACK_ITEMS the rest are counted in a last one.
          blocks: [
            ...items.slice(0, SLACK_ITEMS).map((item) => ({
              accessory: {
                text: { text: 'Open', type: 'plain_text' },
                type: 'button',
                url: item.link,
              },
              text: {
                text: `*${REASON_WORDS[item.reason]}* — ${slackEscape(item.requirement.title)}\n${slackEscape(item.summary)}`,
                type: 'mrkdwn',
              },
              type: 'section',
            })),
            ...(items.length > SLACK_ITEMS
              ? [{ text: { text: `…and ${items.length - SLACK_ITEMS} more`, type: 'mrkdwn' }, type: 'section' }]
              : []),
          ],
          text: slackEscape(items.length === 1 ? line(first) : `${headline(items)}\n${text}`),
        }),
        headers: { 'content-type': 'application/json' },
        kind: 'http',
        url: channel.url ?? '',
      };
    case 'ntfy':
      return {
        body: text,
        headers: {
          'content-type': 'text/plain; charset=utf-8',
          // Headers carry Latin-1 only: ntfy reads RFC 2047 encoded words for the rest.
          Click: first?.link ?? '',
          Priority: String(Math.max(...items.map((i) => NTFY_PRIORITY[i.reason]))),
          Tags: 'bell',
          Title: encodedWord(headline(items)),
        },
        kind: 'http',
        url: channel.url ?? '',
      };
    case 'webhook': {
      const body = JSON.stringify({
        id: delivery.id,
        ...(items.length === 1 && first
          ? {
              link: first.link,
              reason: first.reason,
              requirement: first.requirement,
              since: first.since,
              summary: first.summary,
            }
          : {}),
        items,
      });
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-agent-manager-delivery': delivery.id,
        'x-agent-manager-timestamp': String(timestamp),
      };
      if (secret !== null) {
        headers['x-agent-manager-signature'] = `sha256=${signature(secret, timestamp, body)}`;
      }
      return { body, headers, kind: 'http', url: channel.url ?? '' };
    }
  }
}

/** HMAC-SHA256 over `<timestamp>.<body>` (the timestamp in seconds): a replay of an old body fails its age check. */
export function signature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** Slack's three control characters in text. */
function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A header value: ASCII as it is, anything else as an RFC 2047 encoded word (which ntfy decodes). */
function encodedWord(text: string): string {
  const oneLine = text.replace(/[\r\n]+/g, ' ');
  return /^[\x20-\x7e]*$/.test(oneLine) ? oneLine : `=?UTF-8?B?${Buffer.from(oneLine, 'utf8').toString('base64')}?=`;
}
