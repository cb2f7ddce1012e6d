import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { Configuration, ConfigurationPatch } from '../api-types';

/** The manager's configuration file. Read on demand (the settings dialog), never kept live. */
@Injectable({ providedIn: 'root' })
export class ConfigurationStore {
  private readonly api = inject(Api);
  private readonly versionSig = signal(0);

  /** Bumped on `manager.configuration.updated`, so an open settings dialog reads again. */
  readonly version = this.versionSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.configuration) {
      this.versionSig.update((v) => v + 1);
    }
  }

  read(): Promise<Configuration> {
    return this.api.call(this.api.client.GET('/api/configuration'));
  }

  /** Quiet: the settings dialog marks the field a refusal names instead of a toast. */
  update(patch: ConfigurationPatch): Promise<Configuration> {
    return this.api.call(this.api.client.PATCH('/api/configuration', { body: patch }), true);
  }
}
