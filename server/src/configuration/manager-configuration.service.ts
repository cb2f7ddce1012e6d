import { Injectable, Logger } from '@nestjs/common';

import type { EventActor, NotificationChannel } from '@libs/contracts';

import {
  ConfigurationKey,
  LIVE_CONFIGURATION_KEYS,
  UpdateConfigurationDto,
} from '../core/configuration/configuration.schema';
import { ConfigurationService, ConfigurationSnapshot } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { redactDatabaseUrl } from '../core/database/store';
import { invalid } from '../core/errors/domain-error';
import { EventLog, audit } from '../events/event-log.service';

/** The configuration as the API and events show it: secrets replaced by whether they are set. */
export interface PublicConfiguration extends ConfigurationSnapshot {
  githubWebhookSecretConfigured: boolean;
  gitlabWebhookSecretConfigured: boolean;
  notificationWebhookSecretConfigured: boolean;
  liveFields: ConfigurationKey[];
}

/** Where a channel's URL is cut: what follows the host (an ntfy topic, a Slack hook's path) is its secret. */
const CUT = '/…';

/**
 * A notification channel's URL as the API, events and paired devices see it: scheme and host,
 * the rest cut. An ntfy topic URL is a subscription and a Slack webhook URL a permission to post:
 * whoever reads one keeps receiving (or posting) after any revocation.
 */
export function redactChannelUrl(url: string | null): string | null {
  if (url === null) {
    return null;
  }
  try {
    const parsed = new URL(url);
    return parsed.pathname === '/' && parsed.search === '' ? parsed.origin : `${parsed.origin}${CUT}`;
  } catch {
    return CUT;
  }
}

function redactChannels(channels: readonly NotificationChannel[]): NotificationChannel[] {
  return channels.map((channel) =>
    channel.url === null ? channel : { ...channel, url: redactChannelUrl(channel.url) },
  );
}

/**
 * A channel sent back as it was shown (its URL cut) keeps the URL it has: the settings page can
 * save the list without asking for every URL again. Any other URL is the new one.
 */
function restoreCutUrls(
  patch: UpdateConfigurationDto,
  current: readonly NotificationChannel[],
): UpdateConfigurationDto {
  if (!Array.isArray(patch.notificationChannels)) {
    return patch;
  }
  const byId = new Map(current.map((channel) => [channel.id, channel]));
  const channels = patch.notificationChannels.map((channel) => {
    const before = byId.get(channel.id);
    return before !== undefined && before.url !== null && channel.url === redactChannelUrl(before.url)
      ? { ...channel, url: before.url }
      : channel;
  });
  // A cut URL under a new id (renamed, copied) or another host has nothing to be restored from:
  // saved as it is, it would look like a channel and send nowhere for a day of retries.
  const cut = channels.findIndex((channel) => typeof channel.url === 'string' && channel.url.endsWith(CUT));
  if (cut >= 0) {
    throw invalid(
      'channel_url_cut',
      `notificationChannels[${cut}].url is the shortened form the API shows (…): give the channel's full URL`,
    );
  }
  return { ...patch, notificationChannels: channels };
}

function redact(snapshot: ConfigurationSnapshot): PublicConfiguration {
  return {
    ...snapshot,
    effective: {
      ...snapshot.effective,
      databaseUrl: redactDatabaseUrl(snapshot.effective.databaseUrl),
      notificationChannels: redactChannels(snapshot.effective.notificationChannels),
      githubWebhookSecret: null,
      gitlabWebhookSecret: null,
      notificationWebhookSecret: null,
    },
    githubWebhookSecretConfigured: snapshot.effective.githubWebhookSecret !== null,
    gitlabWebhookSecretConfigured: snapshot.effective.gitlabWebhookSecret !== null,
    notificationWebhookSecretConfigured: snapshot.effective.notificationWebhookSecret !== null,
    liveFields: [...LIVE_CONFIGURATION_KEYS],
    values: {
      ...snapshot.values,
      databaseUrl: redactDatabaseUrl(snapshot.values.databaseUrl),
      notificationChannels: redactChannels(snapshot.values.notificationChannels),
      githubWebhookSecret: null,
      gitlabWebhookSecret: null,
      notificationWebhookSecret: null,
    },
  };
}

/** Configuration changes through the API: persisted, applied, and announced as an event. */
@Injectable()
export class ManagerConfigurationService {
  private readonly logger = new Logger(ManagerConfigurationService.name);

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
  ) {}

  snapshot(): PublicConfiguration {
    return redact(this.configuration.snapshot());
  }

  async update(patch: UpdateConfigurationDto, actor: EventActor): Promise<PublicConfiguration> {
    const current = this.configuration.snapshot().values.notificationChannels;
    const snapshot = redact(await this.configuration.update(restoreCutUrls(patch, current)));
    await this.database.write((tx) =>
      this.events.append(tx, { actor, payload: { configuration: snapshot }, type: 'manager.configuration.updated' }),
    );
    this.logger.log({ ...audit(actor), fields: Object.keys(patch), msg: 'configuration updated' });
    return snapshot;
  }
}
