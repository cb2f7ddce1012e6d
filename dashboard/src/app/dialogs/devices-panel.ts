import { ChangeDetectionStrategy, Component, DestroyRef, OnInit, computed, inject, signal } from '@angular/core';

import type { Device, Pairing } from '@libs/contracts';

import { Api } from '../core/api';
import { I18n } from '../core/i18n';
import { Notifier } from '../core/notifier';

/**
 * Settings → Devices (issue 47 §4): the browsers paired with this manager, a one-time link and
 * its QR code to pair a phone, and Revoke. A paired device sees the list (and may revoke) but
 * pairs nothing: the server refuses it, so the button is not offered there.
 */
@Component({
  selector: 'am-devices-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <section class="devices" aria-labelledby="devices-title" data-testid="devices-panel">
      <h3 id="devices-title">{{ t('devices.title') }}</h3>
      <p class="muted">{{ t('devices.help') }}</p>
      @if (devices().length === 0) {
        <p class="muted" data-testid="devices-none">{{ t('devices.none') }}</p>
      } @else {
        <ul class="device-list">
          @for (d of devices(); track d.id) {
            <li class="row" data-testid="device" [attr.data-device-id]="d.id">
              <span class="device-name">
                <strong>{{ d.name }}</strong>
                @if (d.current) {
                  <span class="badge">{{ t('devices.current') }}</span>
                }
                <span class="muted">
                  {{ t('devices.paired', { t: i18n.dateTime(d.pairedAt) }) }}
                  @if (d.lastSeenAt) {
                    · {{ t('devices.seen', { t: i18n.dateTime(d.lastSeenAt) }) }}
                  }
                </span>
              </span>
              <span class="spacer"></span>
              <button
                type="button"
                class="danger"
                (click)="revoke(d)"
                [attr.aria-label]="t('devices.revokeNamed', { n: d.name })"
              >
                {{ t('devices.revoke') }}
              </button>
            </li>
          }
        </ul>
      }
      @if (pairing(); as p) {
        <div class="pairing" data-testid="pairing">
          <img [src]="p.qrCode" width="180" height="180" [alt]="t('devices.qrAlt')" />
          <div class="pairing-text">
            <p>{{ t('devices.scan', { t: until(p) }) }}</p>
            <div class="row">
              <input
                readonly
                [value]="p.url"
                [attr.aria-label]="t('devices.link')"
                data-testid="pairing-url"
                (focus)="select($event)"
              />
              <button type="button" (click)="copy(p)">{{ t('devices.copyLink') }}</button>
              <button type="button" (click)="cancel()" data-testid="pairing-cancel">{{ t('action.cancel') }}</button>
            </div>
            @if (p.reachability === 'loopback_only') {
              <p class="muted" data-testid="pairing-reachability">{{ t('devices.loopbackOnly') }}</p>
            }
          </div>
        </div>
      } @else if (!isDevice()) {
        <button type="button" (click)="pair()" [disabled]="busy()" data-testid="pair-device">
          {{ t('devices.pair') }}
        </button>
      } @else {
        <p class="muted">{{ t('devices.onlyOwner') }}</p>
      }
    </section>
  `,
  styles: `
    .device-list {
      list-style: none;
      padding: 0;
      margin: 0 0 8px;
    }
    .device-list li {
      gap: 8px;
      padding: 6px 0;
      border-bottom: 1px solid var(--border);
      flex-wrap: wrap;
    }
    .device-name {
      display: flex;
      flex-wrap: wrap;
      gap: 4px 8px;
      align-items: baseline;
      min-width: 0;
      overflow-wrap: anywhere;
    }
    .pairing {
      display: flex;
      flex-wrap: wrap;
      gap: 12px;
      align-items: flex-start;
    }
    .pairing img {
      background: #fff;
      border-radius: 4px;
    }
    .pairing-text {
      flex: 1 1 220px;
      min-width: 0;
    }
    .pairing-text input {
      flex: 1;
      min-width: 0;
    }
  `,
})
export class DevicesPanel implements OnInit {
  private readonly api = inject(Api);
  private readonly notifier = inject(Notifier);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly devices = signal<Device[]>([]);
  protected readonly pairing = signal<Pairing | null>(null);
  protected readonly busy = signal(false);
  /** This dashboard is itself a paired device: it may not pair another. */
  protected readonly isDevice = computed(() => this.devices().some((d) => d.current));

  private watch: ReturnType<typeof setInterval> | undefined;

  constructor() {
    inject(DestroyRef).onDestroy(() => {
      clearInterval(this.watch);
      // A code left on a closed dialog would stay valid for its ten minutes: put it away.
      void this.cancel();
    });
  }

  ngOnInit(): void {
    void this.load();
  }

  protected async pair(): Promise<void> {
    this.busy.set(true);
    try {
      const pairing = await this.api.call(this.api.client.POST('/api/devices/pairings', { body: {} }));
      this.pairing.set(pairing);
      this.watchFor(pairing);
    } catch {
      // shown by the API service
    } finally {
      this.busy.set(false);
    }
  }

  protected async cancel(): Promise<void> {
    const shown = this.pairing();
    if (!shown) {
      return;
    }
    clearInterval(this.watch);
    this.pairing.set(null);
    await this.api
      .call(this.api.client.DELETE('/api/devices/pairings/{id}', { params: { path: { id: shown.id } } }), true)
      .catch(() => undefined);
  }

  protected async revoke(device: Device): Promise<void> {
    try {
      await this.api.call(this.api.client.DELETE('/api/devices/{id}', { params: { path: { id: device.id } } }));
      this.notifier.info(this.t('devices.revoked', { n: device.name }));
    } catch {
      // shown by the API service
    }
    await this.load();
  }

  protected async copy(pairing: Pairing): Promise<void> {
    const copied = await (navigator.clipboard?.writeText(pairing.url).then(
      () => true,
      () => false,
    ) ?? Promise.resolve(false));
    if (copied) {
      this.notifier.info(this.t('devices.copied'));
    } else {
      this.notifier.error(this.t('strip.copyFailed'), pairing.url);
    }
  }

  protected select(event: FocusEvent): void {
    (event.target as HTMLInputElement).select();
  }

  protected until(pairing: Pairing): string {
    return new Date(pairing.expiresAt).toLocaleTimeString(this.i18n.locale(), { hour: '2-digit', minute: '2-digit' });
  }

  /**
   * While the code is shown, the list is read every two seconds: the phone pairs on its own
   * screen, and this one should say so and put the code away (a used code is worth nothing).
   */
  private watchFor(pairing: Pairing): void {
    clearInterval(this.watch);
    this.watch = setInterval(() => {
      if (Date.parse(pairing.expiresAt) <= Date.now()) {
        clearInterval(this.watch);
        this.pairing.set(null);
        return;
      }
      void this.load().then(() => {
        const added = this.devices().find((d) => d.pairingId === pairing.id);
        if (added) {
          clearInterval(this.watch);
          this.pairing.set(null);
          this.notifier.info(this.t('devices.pairedNow', { n: added.name }));
        }
      });
    }, 2000);
  }

  private async load(): Promise<void> {
    try {
      this.devices.set((await this.api.call(this.api.client.GET('/api/devices'), true)).items);
    } catch {
      // an older manager without devices, or offline: the section stays empty
    }
  }
}
