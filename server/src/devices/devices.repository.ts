import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { DeviceEntity, PairingLinkEntity } from './device.entities';

/** The only place that reads and writes `device` and `pairing_link`; every read is one person's. */
@Injectable()
export class DevicesRepository {
  constructor(private readonly database: Database) {}

  addLink(uow: UnitOfWork, link: PairingLinkEntity): void {
    uow.insert(PairingLinkEntity, link);
  }

  /** Inside the unit that redeems it: units run one at a time, so two uses cannot both see it unused. */
  async linkInUnit(uow: UnitOfWork, personId: string, secretHash: string): Promise<PairingLinkEntity | null> {
    return (await uow.reads()).findOne(PairingLinkEntity, { where: { personId, secretHash } });
  }

  link(personId: string, secretHash: string): Promise<PairingLinkEntity | null> {
    return this.database.read(PairingLinkEntity).findOne({ where: { personId, secretHash } });
  }

  /** The link is spent and the device exists, in one unit; a credential the browser held before goes. */
  pair(uow: UnitOfWork, link: PairingLinkEntity, device: DeviceEntity, replacing: string | null): void {
    if (replacing !== null) {
      uow.delete(DeviceEntity, { credentialHash: replacing, personId: device.personId });
    }
    uow.insert(DeviceEntity, device);
    uow.update(PairingLinkEntity, { deviceId: device.id, usedAt: device.pairedAt }, { id: link.id });
  }

  /** A link shown and then put away: spent without a device, so it is "already used" (410) from now on. */
  cancelLink(uow: UnitOfWork, personId: string, id: string, at: string): void {
    uow.execute('UPDATE pairing_link SET used_at = ? WHERE id = ? AND person_id = ? AND used_at IS NULL', [
      at,
      id,
      personId,
    ]);
  }

  linkById(personId: string, id: string): Promise<PairingLinkEntity | null> {
    return this.database.read(PairingLinkEntity).findOne({ where: { id, personId } });
  }

  /** Links older than `before` go: nobody can use them, and a day is long enough to say "already used". */
  pruneLinks(uow: UnitOfWork, before: string): void {
    uow.execute('DELETE FROM pairing_link WHERE created_at < ?', [before]);
  }

  byCredential(personId: string, credentialHash: string): Promise<DeviceEntity | null> {
    return this.database.read(DeviceEntity).findOne({ where: { credentialHash, personId } });
  }

  byId(personId: string, id: string): Promise<DeviceEntity | null> {
    return this.database.read(DeviceEntity).findOne({ where: { id, personId } });
  }

  list(personId: string): Promise<DeviceEntity[]> {
    return this.database.read(DeviceEntity).find({ order: { pairedAt: 'ASC', id: 'ASC' }, where: { personId } });
  }

  seen(uow: UnitOfWork, id: string, at: string): void {
    uow.update(DeviceEntity, { lastSeenAt: at }, { id });
  }

  remove(uow: UnitOfWork, id: string): void {
    uow.delete(DeviceEntity, { id });
  }
}
