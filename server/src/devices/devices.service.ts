import { createHash, randomBytes } from 'node:crypto';

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { renderSVG } from 'uqr';

import type { Device, Pairing } from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { notFound } from '../core/errors/domain-error';
import { isLoopbackHost, isWildcardHost } from '../core/http/serving';
import { newId } from '../core/ids';
import { personText } from '../core/person';
import { RUNTIME, Runtime } from '../core/runtime';
import { DeviceEntity, PairingLinkEntity } from './device.entities';
import { DevicesRepository } from './devices.repository';

/** A link pairs one browser within this long of being shown. */
export const PAIRING_LIFETIME_MS = 10 * 60_000;
/** `last seen` is written at most this often per device: a phone polling must not write on every request. */
const SEEN_EVERY_MS = 60_000;
const LINK_KEPT_MS = 24 * 3600_000;
/** A link's secret: 32 random bytes, base64url. */
export const PAIRING_SECRET = /^[A-Za-z0-9_-]{43}$/;
const CREDENTIAL = /^[0-9a-f]{64}$/;
export const DEVICE_NAME_MAX = 60;

/** What a pairing link is now, for the page that shows it. */
export type LinkState = { state: 'open'; link: PairingLinkEntity } | { state: 'used' | 'expired' | 'unknown' };

const sha256 = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/**
 * Browsers paired with the manager (issue 47 §4): a one-time link becomes a device credential of
 * the browser's own, which acts for the person on the dashboard and its API (never the agent API,
 * never the settings, never another pairing) and is revoked at once: its open streams end with it.
 * Every device is its person's: on a team's board the runners share the table, not the devices.
 */
@Injectable()
export class DevicesService {
  private readonly logger = new Logger('Devices');
  /** Each device's open responses (event streams above all), ended when it is revoked. */
  private readonly open = new Map<string, Set<Response>>();
  /**
   * Revoked ids, marked before the row goes: a request whose lookup found the device just before
   * the revoke is cut when it is tracked, instead of keeping its stream.
   */
  private readonly revoked = new Set<string>();
  private readonly seenAt = new Map<string, number>();
  private readonly personId: string;

  constructor(
    private readonly repository: DevicesRepository,
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {
    this.personId = runtime.person.id;
  }

  /** A new one-time link for `name`, at the origin a phone can reach (and whether it can, as things stand). */
  async createPairing(
    name: string | null | undefined,
    requestHost: string | undefined,
    localPort: number,
  ): Promise<Pairing> {
    const secret = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const link: PairingLinkEntity = {
      createdAt: now.toISOString(),
      deviceId: null,
      expiresAt: new Date(now.getTime() + PAIRING_LIFETIME_MS).toISOString(),
      id: newId('pairing'),
      name: cleanName(name) || 'Phone',
      personId: this.personId,
      secretHash: sha256(secret),
      usedAt: null,
    };
    await this.database.write(async (uow) => {
      this.repository.pruneLinks(uow, new Date(now.getTime() - LINK_KEPT_MS).toISOString());
      this.repository.addLink(uow, link);
    });
    const { origin, reachability } = this.pairingOrigin(requestHost, localPort);
    const url = `${origin}/pair/${secret}`;
    this.logger.log({ id: link.id, msg: 'pairing link created', name: link.name });
    return {
      expiresAt: link.expiresAt,
      id: link.id,
      name: link.name,
      qrCode: `data:image/svg+xml;base64,${Buffer.from(renderSVG(url, { border: 2 })).toString('base64')}`,
      reachability,
      url,
    };
  }

  /** Puts a shown link away before its ten minutes are up (the dialog closed, the code was seen by others). */
  async cancelPairing(id: string): Promise<void> {
    if (!(await this.repository.linkById(this.personId, id))) {
      throw notFound('pairing_not_found', `no pairing link ${id}`);
    }
    await this.database.write(async (uow) => this.repository.cancelLink(uow, this.personId, id, this.clock.nowIso()));
  }

  /** What a link is now; a malformed secret is simply unknown. */
  async linkState(secret: string): Promise<LinkState> {
    if (!PAIRING_SECRET.test(secret)) {
      return { state: 'unknown' };
    }
    return this.stateOf(await this.repository.link(this.personId, sha256(secret)));
  }

  /**
   * Spends the link on a new device and gives its credential (once: only its hash is kept).
   * The link is read again inside the unit, so of two uses at once exactly one pairs. A browser
   * that was a device already gives up its old credential in the same unit (no orphan stays valid).
   */
  async redeem(
    secret: string,
    form: { name?: string | null; userAgent?: string; previousCredential?: string },
  ): Promise<{ device: DeviceEntity; credential: string } | { state: 'used' | 'expired' | 'unknown' }> {
    if (!PAIRING_SECRET.test(secret)) {
      return { state: 'unknown' };
    }
    const credential = randomBytes(32).toString('hex');
    const previous =
      form.previousCredential && CREDENTIAL.test(form.previousCredential) ? sha256(form.previousCredential) : null;
    return this.database.write(async (uow) => {
      const state = this.stateOf(await this.repository.linkInUnit(uow, this.personId, sha256(secret)));
      if (state.state !== 'open') {
        return { state: state.state };
      }
      const now = this.clock.nowIso();
      const device: DeviceEntity = {
        credentialHash: sha256(credential),
        id: newId('device'),
        lastSeenAt: now,
        name: cleanName(form.name) || state.link.name,
        pairedAt: now,
        pairingId: state.link.id,
        personId: this.personId,
        userAgent: form.userAgent ? personText(form.userAgent, 200) || null : null,
      };
      this.repository.pair(uow, state.link, device, previous);
      uow.afterCommit(() => this.logger.log({ device: device.id, msg: 'device paired', name: device.name }));
      return { credential, device };
    });
  }

  /** The device a credential stands for, or null (unknown, revoked, another person's). */
  async authenticate(credential: string): Promise<DeviceEntity | null> {
    if (!CREDENTIAL.test(credential)) {
      return null;
    }
    const device = await this.repository.byCredential(this.personId, sha256(credential));
    if (device) {
      this.touch(device.id);
    }
    return device;
  }

  /**
   * Ends with the device: a revoke destroys its open responses' sockets. False (and the socket
   * cut) when the device was revoked while its request was being authenticated.
   */
  track(deviceId: string, res: Response): boolean {
    if (this.revoked.has(deviceId)) {
      res.socket?.destroy();
      return false;
    }
    let responses = this.open.get(deviceId);
    if (!responses) {
      responses = new Set();
      this.open.set(deviceId, responses);
    }
    responses.add(res);
    res.once('close', () => {
      responses.delete(res);
      if (responses.size === 0 && this.open.get(deviceId) === responses) {
        this.open.delete(deviceId);
      }
    });
    return true;
  }

  async list(currentDeviceId: string | undefined): Promise<Device[]> {
    return (await this.repository.list(this.personId)).map((row) => ({
      current: row.id === currentDeviceId,
      id: row.id,
      lastSeenAt: row.lastSeenAt,
      name: row.name,
      pairedAt: row.pairedAt,
      pairingId: row.pairingId,
      userAgent: row.userAgent,
    }));
  }

  /**
   * Revoked at once: marked first (a request mid-lookup is cut when tracked), the row goes (its
   * credential finds nothing), and its open responses are cut — the one asking, when a device
   * revokes itself, only once its 204 is out.
   */
  async revoke(id: string, asking?: Response): Promise<void> {
    if (!(await this.repository.byId(this.personId, id))) {
      throw notFound('device_not_found', `no paired device ${id}`);
    }
    this.revoked.add(id);
    await this.database.write(async (uow) => this.repository.remove(uow, id));
    for (const res of this.open.get(id) ?? []) {
      if (res === asking) {
        res.once('finish', () => res.socket?.destroy());
      } else {
        res.socket?.destroy();
      }
    }
    this.open.delete(id);
    this.seenAt.delete(id);
    this.logger.log({ device: id, msg: 'device revoked' });
  }

  private stateOf(link: PairingLinkEntity | null): LinkState {
    if (!link) {
      return { state: 'unknown' };
    }
    if (link.usedAt !== null) {
      return { state: 'used' };
    }
    if (link.expiresAt <= this.clock.nowIso()) {
      return { state: 'expired' };
    }
    return { link, state: 'open' };
  }

  private touch(id: string): void {
    const now = this.clock.now().getTime();
    if (now - (this.seenAt.get(id) ?? 0) < SEEN_EVERY_MS) {
      return;
    }
    this.seenAt.set(id, now);
    const at = new Date(now).toISOString();
    this.database
      .write(async (uow) => this.repository.seen(uow, id, at))
      .catch((err: Error) => this.logger.warn({ device: id, err: err.message, msg: 'last seen not written' }));
  }

  /**
   * Where the phone should go: over TLS the certificate's name (what a phone can verify) unless
   * the configured host is one of its names; else the configured host beyond loopback; on
   * loopback, the name this browser used, marked as reachable only through a tunnel.
   */
  private pairingOrigin(
    requestHost: string | undefined,
    localPort: number,
  ): { origin: string; reachability: Pairing['reachability'] } {
    const { certificateNames, scheme } = this.runtime.serving;
    const host = this.configuration.get('host');
    const named = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    if (scheme === 'https' && certificateNames[0] && !certificateNames.includes(named.toLowerCase())) {
      return { origin: `https://${certificateNames[0]}:${localPort}`, reachability: null };
    }
    if (!isWildcardHost(host) && !isLoopbackHost(host)) {
      return { origin: `${scheme}://${named}:${localPort}`, reachability: null };
    }
    return { origin: `${scheme}://${requestHost ?? `127.0.0.1:${localPort}`}`, reachability: 'loopback_only' };
  }
}

/** `null` passes `@IsOptional()` as absent does: no name given. */
function cleanName(name: string | null | undefined): string {
  return typeof name === 'string' ? personText(name, DEVICE_NAME_MAX) : '';
}
