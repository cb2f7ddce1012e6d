import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { NetworkBlocked, RequirementNetwork } from '../api-types';
import { ConfigurationStore } from './configuration-store';

/** The allow-list entry that opens exactly what was refused: the host and its port. */
export function entryFor(blocked: Pick<NetworkBlocked, 'host' | 'port'>): string {
  return `${blocked.host.includes(':') ? `[${blocked.host}]` : blocked.host}:${blocked.port}`;
}

/**
 * Each open Requirement's network (issue 45): its own allowed hosts and what its runs' proxies
 * refused, read when its page shows it and kept current by `network.blocked`.
 */
@Injectable({ providedIn: 'root' })
export class NetworkStore {
  private readonly api = inject(Api);
  private readonly configuration = inject(ConfigurationStore);
  private readonly networksSig = signal<ReadonlyMap<string, RequirementNetwork>>(new Map());

  readonly networks = this.networksSig.asReadonly();

  /** Merges refusals an event carried into the Requirements whose network is shown (LiveSync calls this). */
  sync(changes: Changes): void {
    if (!changes.networkBlocked) {
      return;
    }
    const next = new Map(this.networksSig());
    let changed = false;
    for (const blocked of changes.networkBlocked) {
      const network = next.get(blocked.requirementId);
      if (network) {
        const others = network.blocked.filter((b) => b.id !== blocked.id);
        next.set(blocked.requirementId, {
          ...network,
          blocked: [blocked, ...others].sort((a, b) => (a.lastAt < b.lastAt ? 1 : a.lastAt > b.lastAt ? -1 : 0)),
        });
        changed = true;
      }
    }
    if (changed) {
      this.networksSig.set(next);
    }
  }

  async read(requirementId: string): Promise<void> {
    const network = await this.api.call(
      this.api.client.GET('/api/requirements/{id}/network', { params: { path: { id: requirementId } } }),
      true,
    );
    this.put(network);
  }

  /** The person allows what was refused for this Requirement only. */
  async allowForRequirement(requirementId: string, entry: string): Promise<void> {
    const current = this.networksSig().get(requirementId)?.allow ?? [];
    this.put(
      await this.api.call(
        this.api.client.PUT('/api/requirements/{id}/network', {
          body: { allow: [...new Set([...current, entry])] },
          params: { path: { id: requirementId } },
        }),
      ),
    );
  }

  async removeForRequirement(requirementId: string, entry: string): Promise<void> {
    const current = this.networksSig().get(requirementId)?.allow ?? [];
    this.put(
      await this.api.call(
        this.api.client.PUT('/api/requirements/{id}/network', {
          body: { allow: current.filter((e) => e !== entry) },
          params: { path: { id: requirementId } },
        }),
      ),
    );
  }

  /** The person allows it for every Requirement of the workspace (`networkAllow`). */
  async allowForWorkspace(entry: string): Promise<void> {
    const { values } = await this.configuration.read();
    await this.api.call(
      this.api.client.PATCH('/api/configuration', {
        body: { networkAllow: [...new Set([...values.networkAllow, entry])] },
      }),
    );
  }

  private put(network: RequirementNetwork): void {
    const next = new Map(this.networksSig());
    next.set(network.requirementId, network);
    this.networksSig.set(next);
  }
}
