import { Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import {
  ConfigurationKey,
  LIVE_CONFIGURATION_KEYS,
  UpdateConfigurationDto,
} from '../core/configuration/configuration.schema';
import { ConfigurationService, ConfigurationSnapshot } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { redactDatabaseUrl } from '../core/database/store';
import { EventLog, audit } from '../events/event-log.service';

/** The configuration as the API and events show it: secrets replaced by whether they are set. */
export interface PublicConfiguration extends ConfigurationSnapshot {
  githubWebhookSecretConfigured: boolean;
  notificationWebhookSecretConfigured: boolean;
  liveFields: ConfigurationKey[];
}

function redact(snapshot: ConfigurationSnapshot): PublicConfiguration {
  return {
    ...snapshot,
    effective: {
      ...snapshot.effective,
      databaseUrl: redactDatabaseUrl(snapshot.effective.databaseUrl),
      githubWebhookSecret: null,
      notificationWebhookSecret: null,
    },
    githubWebhookSecretConfigured: snapshot.effective.githubWebhookSecret !== null,
    notificationWebhookSecretConfigured: snapshot.effective.notificationWebhookSecret !== null,
    liveFields: [...LIVE_CONFIGURATION_KEYS],
    values: {
      ...snapshot.values,
      databaseUrl: redactDatabaseUrl(snapshot.values.databaseUrl),
      githubWebhookSecret: null,
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
    const snapshot = redact(await this.configuration.update(patch));
    await this.database.write((tx) =>
      this.events.append(tx, { actor, payload: { configuration: snapshot }, type: 'manager.configuration.updated' }),
    );
    this.logger.log({ ...audit(actor), fields: Object.keys(patch), msg: 'configuration updated' });
    return snapshot;
  }
}
