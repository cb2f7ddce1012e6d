import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { DeviceEntity, PairingLinkEntity } from './device.entities';

/** The only place that reads and writes `device` and `pairing_link`. */
@Injectable()
export class DevicesRepository {
  constructor(private readonly database: Database) {}

  addLink(uow: UnitOfWork, link: PairingLinkEntity): void {
    uow.insert(PairingLinkEntity, link);
  }

  /** Inside the unit that redeems it: units run one at a time, so two uses cannot both see it unused. */
  async linkInUnit(uow: UnitOfWork, secretHash: string): Promise<PairingLinkEntity | null> {
    return (await uow.reads()).findOne(PairingLinkEntity, { where: { secretHash } });
  }

  link(secretHash: string): Promise<PairingLinkEntity | null> {
    return this.database.read(PairingLinkEntity).findOne({ where: { secretHash } });
  }

  /** The link is spent and the device exists, in one unit. */
  pair(uow: UnitOfWork, link: PairingLinkEntity, device: DeviceEntity, at: string): void {
    uow.insert(DeviceEntity, device);
    uow.update(PairingLinkEntity, { deviceId: device.id, usedAt: at }, { id: link.id });
  }

  /** Links older than `before` go: nobody can use them, and a day is long enough to say "already used". */
  pruneLinks(uow: UnitOfWork, before: string): void {
    uow.execute('DELETE FROM pairing_link WHERE created_at < ?', [before]);
  }

  byCredential(credentialHash: string): Promise<DeviceEntity | null> {
    return this.database.read(DeviceEntity).findOne({ where: { credentialHash } });
  }

  list(): Promise<DeviceEntity[]> {
    return this.database.read(DeviceEntity).find({ order: { pairedAt: 'ASC', id: 'ASC' } });
  }

  seen(uow: UnitOfWork, id: string, at: string): void {
    uow.update(DeviceEntity, { lastSeenAt: at }, { id });
  }

  remove(uow: UnitOfWork, id: string): void {
    uow.delete(DeviceEntity, { id });
  }
}
