import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { ModelCatalog } from '../api-types';

/**
 * The manager's model catalog (what each provider accepts), for the create and edit dialogs.
 * Read once, when a dialog first needs it; then kept whole from `model_catalog.updated`.
 */
@Injectable({ providedIn: 'root' })
export class ModelCatalogStore {
  private readonly api = inject(Api);
  private readonly catalogSig = signal<ModelCatalog | null>(null);
  private loading: Promise<void> | null = null;

  readonly catalog = this.catalogSig.asReadonly();

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.modelCatalog) {
      this.catalogSig.set(changes.modelCatalog);
    }
  }

  /** Reads the catalog unless it is there already; quiet: the dialogs still work without it (free text). */
  load(): Promise<void> {
    this.loading ??= this.api
      .call(this.api.client.GET('/api/models'), true)
      .then((catalog) => {
        // An event that arrived while the read was in flight is newer: keep it.
        if (this.catalogSig() === null) {
          this.catalogSig.set(catalog);
        }
      })
      .catch(() => {
        this.loading = null;
      });
    return this.loading;
  }
}
