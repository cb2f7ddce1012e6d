import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';

import type {
  ManagerEvent,
  NotificationChannel,
  NotificationDelivery,
  NotificationDeliveryItem,
} from '@libs/contracts';

import { AttentionService } from '../attention/attention.service';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { parseNotificationChannels } from '../core/configuration/notification-channels';
import { Database } from '../core/database/database.service';
import { notFound } from '../core/errors/domain-error';
import { newId } from '../core/ids';
import { runBounded } from '../core/process/bounded-process';
import { RUNTIME, Runtime } from '../core/runtime';
import { runningInstance } from '../core/workspace/instance-lock';
import { OnCommitted } from '../events/on-committed';
import { NotificationDeliveryEntity, NotificationPendingEntity } from './notification.entities';
import { OutgoingMessage, messageFor } from './notification-messages';
import { NotificationsRepository } from './notifications.repository';

/** Items that open within this long of a channel's last message wait and go together in the next one. */
export const COALESCE_MS = 10_000;
/** A delivery is retried for this long, then given up (`failed`). */
const GIVE_UP_MS = 24 * 3600_000;
/** Retries back off from 2 s, doubling, to at most this. */
const MAX_BACKOFF_MS = 10 * 60_000;
/** One send waits at most this long for the receiver. */
const SEND_TIMEOUT_MS = 10_000;
/** Deliveries kept for the list. */
const HISTORY_MS = 30 * 24 * 3600_000;
/** Items and deliveries one look handles at most (the rest at the next). */
const BATCH = 500;

export function toDelivery(row: NotificationDeliveryEntity): NotificationDelivery {
  return {
    attempts: row.attempts,
    channelId: row.channelId,
    createdAt: row.createdAt,
    deliveredAt: row.deliveredAt,
    id: row.id,
    items: row.items,
    kind: row.kind,
    lastError: row.lastError,
    nextAttemptAt: row.nextAttemptAt,
    status: row.status,
  };
}

/**
 * Needs you outside the browser (issue 47 §3). An opened item is owed to every channel that wants
 * its reason and person (a reaction to `attention.opened`: at least once, and the owed row's key
 * makes it once per channel and item). A pump then turns what is due into deliveries — one
 * message per channel, the items of a 10 s window together, those cleared before a channel's
 * delay left out — each written before it is sent, so a retry (after a receiver's error or a
 * restart) sends the same id. Sends never hold up anything else: each waits at most 10 s, a
 * failure is retried with backoff for 24 h and shows in the list. In team mode the board's
 * leader sends.
 */
@Injectable()
export class NotificationsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(NotificationsService.name);
  private readonly lastSent = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly attention: AttentionService,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly repository: NotificationsRepository,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const [channel, at] of await this.repository.lastSent()) {
      this.lastSent.set(channel, Date.parse(at));
    }
    this.runtime.board?.onLeadership(() => void this.pump());
    void this.pump();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) {
      clearTimeout(this.timer);
    }
  }

  channels(): NotificationChannel[] {
    return parseNotificationChannels(this.configuration.get('notificationChannels')).channels;
  }

  @OnCommitted(['attention.opened'])
  async itemsOpened(events: ManagerEvent[]): Promise<void> {
    const channels = this.channels();
    // Team mode: the leader owes and sends, to the channels it is configured with.
    if (channels.length === 0 || (this.runtime.board && !this.runtime.board.leads)) {
      return;
    }
    const now = this.clock.nowIso();
    await this.database.write(async (tx) => {
      for (const event of events) {
        if (event.type !== 'attention.opened') {
          continue;
        }
        const { item, requirement } = event.payload;
        for (const channel of channels) {
          if (
            (channel.reasons && !channel.reasons.includes(item.reason)) ||
            (channel.person && channel.person !== item.person.id)
          ) {
            continue;
          }
          this.repository.owe(tx, {
            channelId: channel.id,
            createdAt: now,
            deliveryId: null,
            dueAt: new Date(Date.parse(event.createdAt) + channel.delaySeconds * 1000).toISOString(),
            itemId: item.id,
            reason: item.reason,
            requirementId: item.requirementId,
            since: item.since,
            summary: item.summary,
            title: requirement.title,
          });
        }
      }
    });
    void this.pump();
  }

  /** GET /notifications/deliveries: the latest first. */
  async list(limit: number, channelId?: string): Promise<NotificationDelivery[]> {
    return (await this.repository.list(limit, channelId)).map(toDelivery);
  }

  /**
   * POST /notifications/channels/:id/test: one message with a sample item, sent now and not
   * retried (a person is watching); the answer says how it went.
   */
  async test(channelId: string): Promise<NotificationDelivery> {
    const channel = this.channels().find((c) => c.id === channelId);
    if (!channel) {
      throw notFound('channel_not_found', `no notification channel "${channelId}" in notificationChannels`);
    }
    const now = this.clock.nowIso();
    const delivery: NotificationDeliveryEntity = {
      attempts: 0,
      channelId,
      createdAt: now,
      deliveredAt: null,
      id: newId('delivery'),
      items: [
        {
          id: 'atn_test',
          link: `${this.baseUrl()}/attention`,
          reason: 'waiting_reply',
          requirement: { id: 'req_test', title: 'A test from Agent Manager' },
          since: now,
          summary: 'This channel works: Needs-you items will arrive here.',
        },
      ],
      kind: channel.kind,
      lastError: null,
      nextAttemptAt: null,
      status: 'pending',
    };
    const error = await this.send(channel, delivery);
    const settled = {
      ...delivery,
      attempts: 1,
      deliveredAt: error === null ? this.clock.nowIso() : null,
      lastError: error,
      status: error === null ? ('delivered' as const) : ('failed' as const),
    };
    await this.database.write(async (tx) => this.repository.take(tx, settled, []));
    return toDelivery(settled);
  }

  /** Asks for a look; one runs at a time and one asked for meanwhile runs after it. */
  pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      try {
        do {
          this.again = false;
          await this.look().catch((err: unknown) =>
            this.logger.warn(`notifications could not be looked at: ${(err as Error).message}`),
          );
        } while (this.again && !this.stopped);
      } finally {
        this.pumping = null;
        // Whatever a look did or failed to do, the next is armed: a retry never waits for a new item.
        await this.schedule().catch(() => this.arm(this.clock.now().getTime() + 5000));
      }
    })();
    return this.pumping;
  }

  private async look(): Promise<void> {
    if (this.stopped || (this.runtime.board && !this.runtime.board.leads)) {
      return;
    }
    const channels = new Map(this.channels().map((c) => [c.id, c]));
    await this.takeDueItems(channels);
    const due = await this.repository.due(this.clock.nowIso(), BATCH);
    await Promise.all(due.map((delivery) => this.attempt(channels.get(delivery.channelId), delivery)));
    await this.database.write(async (tx) =>
      this.repository.prune(tx, new Date(this.clock.now().getTime() - HISTORY_MS).toISOString()),
    );
  }

  /** Turns due items into deliveries: one per channel, unless its last message is under 10 s old. */
  private async takeDueItems(channels: Map<string, NotificationChannel>): Promise<void> {
    const nowMs = this.clock.now().getTime();
    const now = new Date(nowMs).toISOString();
    const byChannel = new Map<string, NotificationPendingEntity[]>();
    for (const item of await this.repository.untaken(BATCH)) {
      if (item.dueAt <= now) {
        byChannel.set(item.channelId, [...(byChannel.get(item.channelId) ?? []), item]);
      }
    }
    for (const [channelId, items] of byChannel) {
      const channel = channels.get(channelId);
      const last = this.lastSent.get(channelId);
      if (channel && last !== undefined && nowMs - last < COALESCE_MS) {
        continue; // the window's end looks again (schedule)
      }
      // What closed before a delayed channel's wait ran out is not sent; a removed channel gets nothing.
      const open =
        channel && channel.delaySeconds > 0 ? await this.attention.openIds(items.map((i) => i.itemId)) : null;
      const send = channel ? items.filter((i) => open === null || open.has(i.itemId)) : [];
      const forget = items.filter((i) => !send.includes(i));
      await this.database.write(async (tx) => {
        this.repository.forget(tx, forget);
        if (channel && send.length > 0) {
          this.repository.take(tx, this.newDelivery(channel, send, now), send);
        }
      });
      if (send.length > 0) {
        this.lastSent.set(channelId, nowMs);
      }
    }
  }

  private newDelivery(
    channel: NotificationChannel,
    items: NotificationPendingEntity[],
    now: string,
  ): NotificationDeliveryEntity {
    const base = this.baseUrl();
    return {
      attempts: 0,
      channelId: channel.id,
      createdAt: now,
      deliveredAt: null,
      id: newId('delivery'),
      items: items.map((i): NotificationDeliveryItem => ({
        id: i.itemId,
        link: `${base}/requirements/${i.requirementId}`,
        reason: i.reason,
        requirement: { id: i.requirementId, title: i.title },
        since: i.since,
        summary: i.summary,
      })),
      kind: channel.kind,
      lastError: null,
      nextAttemptAt: now,
      status: 'pending',
    };
  }

  /** One attempt at a delivery; what happened is written before the next look. */
  private async attempt(channel: NotificationChannel | undefined, delivery: NotificationDeliveryEntity): Promise<void> {
    const error = channel ? await this.send(channel, delivery) : `the channel "${delivery.channelId}" was removed`;
    const now = this.clock.now().getTime();
    const attempts = delivery.attempts + 1;
    const giveUp = channel === undefined || now - Date.parse(delivery.createdAt) >= GIVE_UP_MS;
    const set: Partial<NotificationDeliveryEntity> =
      error === null
        ? {
            attempts,
            deliveredAt: new Date(now).toISOString(),
            lastError: null,
            nextAttemptAt: null,
            status: 'delivered',
          }
        : {
            attempts,
            lastError: error,
            nextAttemptAt: giveUp
              ? null
              : new Date(now + Math.min(2000 * 2 ** (attempts - 1), MAX_BACKOFF_MS)).toISOString(),
            status: giveUp ? 'failed' : 'pending',
          };
    if (error !== null) {
      this.logger.warn({
        attempts,
        channel: delivery.channelId,
        delivery: delivery.id,
        error,
        msg: 'notification not delivered',
      });
    }
    await this.database.write(async (tx) => this.repository.settle(tx, delivery.id, set));
  }

  /** Sends one message; null when the receiver took it, else what went wrong. */
  private async send(
    channel: NotificationChannel,
    delivery: Pick<NotificationDeliveryEntity, 'id' | 'items'>,
  ): Promise<string | null> {
    const message: OutgoingMessage = messageFor(
      channel,
      delivery,
      this.configuration.get('notificationWebhookSecret'),
      Math.floor(this.clock.now().getTime() / 1000),
    );
    if (message.kind === 'desktop') {
      const result = await runBounded(
        process.platform === 'darwin' ? 'osascript' : 'notify-send',
        process.platform === 'darwin'
          ? ['-e', `display notification ${appleString(message.body)} with title ${appleString(message.title)}`]
          : ['--app-name=Agent Manager', '--', message.title, markupEscaped(message.body)],
        { cwd: this.runtime.paths.root, maxBytes: 4096, timeoutMs: SEND_TIMEOUT_MS },
      );
      return (
        result.error ??
        (result.code === 0 ? null : `exit ${result.code ?? result.signal}: ${result.stderr.slice(0, 300)}`)
      );
    }
    try {
      const response = await fetch(message.url, {
        body: message.body,
        headers: message.headers,
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
      await response.arrayBuffer().catch(() => undefined);
      return response.ok ? null : `the receiver answered ${response.status}`;
    } catch (err) {
      const cause = (err as Error & { cause?: Error }).cause;
      return `could not send: ${(cause ?? (err as Error)).message}`.slice(0, 500);
    }
  }

  /** The next look: when the earliest owed thing is due, or a coalescing window ends. */
  private async schedule(): Promise<void> {
    if (this.stopped) {
      return;
    }
    const now = this.clock.now().getTime();
    const next = await this.repository.nextDue();
    let at = next === null ? Infinity : Date.parse(next);
    if (at <= now) {
      // Due already, yet left: held by a coalescing window, which the earliest end lets go.
      const ends = [...this.lastSent.values()].map((last) => last + COALESCE_MS).filter((end) => end > now);
      at = ends.length > 0 ? Math.min(...ends) : now + 1000;
    }
    this.arm(at);
  }

  /** The next look at `at` (ms; Infinity: none until something is owed), at most a minute away. */
  private arm(at: number): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (at !== Infinity && !this.stopped) {
      const wait = Math.min(Math.max(at - this.clock.now().getTime(), 50), 60_000);
      this.timer = setTimeout(() => void this.pump(), wait);
      this.timer.unref();
    }
  }

  /** Where the dashboard is: this manager's own URL (from its lock), else the configured address. */
  private baseUrl(): string {
    return (
      runningInstance(this.runtime.paths.lockPath)?.url ??
      `http://${this.configuration.get('host')}:${this.configuration.get('port')}`
    );
  }
}

/** notify-send's body is markup to most notification daemons: what an agent wrote stays text. */
function markupEscaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** An AppleScript string literal. */
function appleString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
