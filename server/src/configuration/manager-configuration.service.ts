import { Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { UpdateConfigurationDto } from '../core/configuration/configuration.schema';
import { ConfigurationService, ConfigurationSnapshot } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { EventLog, audit } from '../events/event-log.service';

/** Configuration changes through the API: persisted, applied, and announced as an event. */
@Injectable()
export class ManagerConfigurationService {
  private readonly logger = new Logger(ManagerConfigurationService.name);

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
  ) {}

  snapshot(): ConfigurationSnapshot {
    return this.configuration.snapshot();
  }

  async update(patch: UpdateConfigurationDto, actor: EventActor): Promise<ConfigurationSnapshot> {
    const snapshot = await this.configuration.update(patch);
    await this.database.write((tx) =>
      this.events.append(tx, { actor, payload: { configuration: snapshot }, type: 'manager.configuration.updated' }),
    );
    this.logger.log({ ...audit(actor), fields: Object.keys(patch), msg: 'configuration updated' });
    return snapshot;
  }
}
