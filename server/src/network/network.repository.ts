import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { NetworkBlockedEntity, RequirementNetworkEntity } from './network.entities';

/** The `requirement_network` and `network_blocked` tables. Nothing else names them. */
@Injectable()
export class NetworkRepository {
  constructor(private readonly database: Database) {}

  async allowOf(requirementId: string): Promise<string[]> {
    const row = await this.database.read(RequirementNetworkEntity).findOneBy({ requirementId });
    return row?.allow ?? [];
  }

  async setAllow(uow: UnitOfWork, requirementId: string, allow: string[], now: string): Promise<void> {
    const existing = await (await uow.reads()).findOneBy(RequirementNetworkEntity, { requirementId });
    if (existing) {
      uow.update(RequirementNetworkEntity, { allow, updatedAt: now }, { requirementId });
    } else {
      uow.insert(RequirementNetworkEntity, { allow, requirementId, updatedAt: now });
    }
  }

  insertBlocked(uow: UnitOfWork, row: NetworkBlockedEntity): void {
    uow.insert(NetworkBlockedEntity, { ...row });
  }

  updateBlocked(uow: UnitOfWork, id: string, set: Pick<NetworkBlockedEntity, 'count' | 'lastAt'>): void {
    uow.update(NetworkBlockedEntity, set, { id });
  }

  /** Most recent first. */
  blocked(query: { since?: string; requirementId?: string; limit: number }): Promise<NetworkBlockedEntity[]> {
    const qb = this.database.read(NetworkBlockedEntity).createQueryBuilder('b');
    if (query.since !== undefined) {
      qb.andWhere('b.last_at >= :since', { since: query.since });
    }
    if (query.requirementId !== undefined) {
      qb.andWhere('b.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    return qb.orderBy('b.last_at', 'DESC').addOrderBy('b.id', 'DESC').limit(query.limit).getMany();
  }
}
