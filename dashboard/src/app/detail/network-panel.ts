import { ChangeDetectionStrategy, Component, computed, effect, inject, input, signal } from '@angular/core';

import { I18n } from '../core/i18n';
import { NetworkStore, entryFor } from '../core/stores/network-store';

interface BlockedHost {
  entry: string;
  count: number;
  reason: string;
  lastAt: string;
}

/**
 * What a Requirement's runs were refused on the network (issue 45), each host once with its count
 * over every run, with the two ways to open it: for this Requirement, or for the workspace.
 */
@Component({
  selector: 'am-network-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    @if (allowed().length > 0) {
      <p class="row" style="flex-wrap: wrap; gap: 0.25rem" data-testid="network-allowed">
        <span class="muted">{{ t('network.allowedHere') }}</span>
        @for (entry of allowed(); track entry) {
          <span class="badge" [attr.data-entry]="entry"
            ><code>{{ entry }}</code>
            <button
              type="button"
              class="small"
              (click)="remove(entry)"
              [attr.aria-label]="t('network.remove', { entry })"
              data-testid="network-remove"
            >
              ×
            </button></span
          >
        }
      </p>
    }
    <ul class="list">
      @for (host of blocked(); track host.entry) {
        <li class="row" data-testid="blocked-host" [attr.data-entry]="host.entry" style="flex-wrap: wrap">
          <span class="spacer" style="overflow-wrap: anywhere">
            <code>{{ host.entry }}</code> ×{{ host.count }}
            <span class="muted">{{ host.reason }}</span>
          </span>
          @if (allowed().includes(host.entry)) {
            <span class="badge">{{ t('network.nowAllowed') }}</span>
          } @else {
            <button
              type="button"
              class="small"
              [disabled]="busy()"
              (click)="allowHere(host.entry)"
              data-testid="allow-here"
            >
              {{ t('network.allowHere') }}
            </button>
            <button
              type="button"
              class="small"
              [disabled]="busy()"
              (click)="allowWorkspace(host.entry)"
              data-testid="allow-workspace"
            >
              {{ t('network.allowWorkspace') }}
            </button>
          }
        </li>
      } @empty {
        <li class="empty" style="border: 0">{{ t('network.noneBlocked') }}</li>
      }
    </ul>
  `,
})
export class NetworkPanel {
  readonly requirementId = input.required<string>();
  private readonly store = inject(NetworkStore);
  protected readonly t = inject(I18n).t;
  protected readonly busy = signal(false);
  private readonly workspaceAllowed = signal<ReadonlySet<string>>(new Set());

  private readonly network = computed(() => this.store.networks().get(this.requirementId()));
  protected readonly allowed = computed(() => this.network()?.allow ?? []);
  /** One line per host and port over every run, most recent first. */
  protected readonly blocked = computed<BlockedHost[]>(() => {
    const byEntry = new Map<string, BlockedHost>();
    for (const row of this.network()?.blocked ?? []) {
      const entry = entryFor(row);
      if (this.workspaceAllowed().has(entry)) {
        continue;
      }
      const known = byEntry.get(entry);
      if (known) {
        known.count += row.count;
      } else {
        byEntry.set(entry, { count: row.count, entry, lastAt: row.lastAt, reason: row.reason });
      }
    }
    return [...byEntry.values()];
  });

  constructor() {
    effect(() => {
      void this.store.read(this.requirementId()).catch(() => undefined);
    });
  }

  protected async allowHere(entry: string): Promise<void> {
    await this.act(() => this.store.allowForRequirement(this.requirementId(), entry));
  }

  protected async allowWorkspace(entry: string): Promise<void> {
    await this.act(async () => {
      await this.store.allowForWorkspace(entry);
      this.workspaceAllowed.update((set) => new Set([...set, entry]));
    });
  }

  protected async remove(entry: string): Promise<void> {
    await this.act(() => this.store.removeForRequirement(this.requirementId(), entry));
  }

  private async act(action: () => Promise<void>): Promise<void> {
    this.busy.set(true);
    try {
      await action();
    } catch {
      // shown by the API service
    } finally {
      this.busy.set(false);
    }
  }
}
