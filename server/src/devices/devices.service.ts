import { createHash, randomBytes } from 'node:crypto';

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { renderSVG } from 'uqr';

import type { Device, Pairing } from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { notFound } from '../core/errors/domain-error';
import { isLoopbackHost } from '../core/http/serving';
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
const SECRET = /^[A-Za-z0-9_-]{43}$/;
export const DEVICE_NAME_MAX = 60;

/** What a pairing link is now, for the page that shows it. */
export type LinkState = { state: 'open'; link: PairingLinkEntity } | { state: 'used' | 'expired' | 'unknown' };

const hash = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/**
 * Browsers paired with the manager (issue 47 §4): a one-time link becomes a device credential of
 * the browser's own, which acts for the person on the dashboard and its API (never the agent API,
 * never the settings, never another pairing) and is revoked at once: its open streams end with it.
 */
@Injectable()
export class DevicesService {
  private readonly logger = new Logger('Devices');
  /** Each device's open responses (event streams above all), ended when it is revoked. */
  private readonly open = new Map<string, Set<Response>>();
  private readonly seenAt = new Map<string, number>();

  constructor(
    private readonly repository: DevicesRepository,
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

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
      secretHash: hash(secret),
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

  /** What a link is now; a malformed secret is simply unknown. */
  async linkState(secret: string): Promise<LinkState> {
    if (!SECRET.test(secret)) {
      return { state: 'unknown' };
    }
    return this.stateOf(await this.repository.link(hash(secret)));
  }

  /**
   * Spends the link on a new device and gives its credential (once: only its hash is kept).
   * The link is read again inside the unit, so of two uses at once exactly one pairs.
   */
  async redeem(
    secret: string,
    name: string | undefined,
    userAgent: string | undefined,
  ): Promise<{ device: DeviceEntity; credential: string } | { state: 'used' | 'expired' | 'unknown' }> {
    if (!SECRET.test(secret)) {
      return { state: 'unknown' };
    }
    const credential = randomBytes(32).toString('hex');
    return this.database.write(async (uow) => {
      const state = this.stateOf(await this.repository.linkInUnit(uow, hash(secret)));
      if (state.state !== 'open') {
        return { state: state.state };
      }
      const now = this.clock.nowIso();
      const device: DeviceEntity = {
        credentialHash: hash(credential),
        id: newId('device'),
        lastSeenAt: now,
        name: cleanName(name) || state.link.name,
        pairedAt: now,
        userAgent: userAgent ? personText(userAgent, 200) || null : null,
      };
      this.repository.pair(uow, state.link, device, now);
      uow.afterCommit(() => this.logger.log({ device: device.id, msg: 'device paired', name: device.name }));
      return { credential, device };
    });
  }

  /** The device a credential stands for, or null (unknown or revoked: the row is gone). */
  async authenticate(credential: string): Promise<DeviceEntity | null> {
    if (!/^[0-9a-f]{64}$/.test(credential)) {
      return null;
    }
    const device = await this.repository.byCredential(hash(credential));
    if (device) {
      this.touch(device.id);
    }
    return device;
  }

  /** Ends with the device: a revoke destroys its open responses' sockets. */
  track(deviceId: string, res: Response): void {
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
  }

  async list(currentDeviceId: string | undefined): Promise<Device[]> {
    return (await this.repository.list()).map((row) => ({
      current: row.id === currentDeviceId,
      id: row.id,
      lastSeenAt: row.lastSeenAt,
      name: row.name,
      pairedAt: row.pairedAt,
      userAgent: row.userAgent,
    }));
  }

  /** Revoked at once: the row goes (its credential finds nothing), and its open streams are cut. */
  async revoke(id: string): Promise<void> {
    const known = (await this.repository.list()).some((row) => row.id === id);
    if (!known) {
      throw notFound('device_not_found', `no paired device ${id}`);
    }
    await this.database.write(async (uow) => this.repository.remove(uow, id));
    for (const res of this.open.get(id) ?? []) {
      res.socket?.destroy();
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
   * Where the phone should go: the configured host beyond loopback (or the certificate's name on
   * a wildcard bind); on loopback, the name this browser used, with a word on why a phone cannot
   * follow it without a tunnel.
   */
  private pairingOrigin(
    requestHost: string | undefined,
    localPort: number,
  ): { origin: string; reachability: string | null } {
    const scheme = this.runtime.serving?.scheme ?? 'http';
    const host = this.configuration.get('host');
    const wildcard = host === '0.0.0.0' || host === '::';
    const certificateName = this.runtime.serving?.certificateNames[0];
    if (!wildcard && !isLoopbackHost(host)) {
      return { origin: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${localPort}`, reachability: null };
    }
    if (wildcard && certificateName) {
      return { origin: `${scheme}://${certificateName}:${localPort}`, reachability: null };
    }
    return {
      origin: `${scheme}://${requestHost ?? `127.0.0.1:${localPort}`}`,
      reachability:
        'This manager answers only on loopback: the phone reaches this link through a tunnel (an SSH tunnel to this port), or start the manager with --host and TLS (see the README: Tailscale)',
    };
  }
}

/** `null` passes `@IsOptional()` as absent does: no name given. */
function cleanName(name: string | null | undefined): string {
  return typeof name === 'string' ? personText(name, DEVICE_NAME_MAX) : '';
}
