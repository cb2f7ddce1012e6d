import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementCheckpointEntity } from './requirement-checkpoint.entity';

/** Checkpoints listed per Requirement at most (the newest). */
export const CHECKPOINTS_LISTED = 1000;

/** The `requirement_checkpoint` table. Nothing else names it. */
@Injectable()
export class CheckpointsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, row: RequirementCheckpointEntity): void {
    uow.insert(RequirementCheckpointEntity, { ...row });
  }

  find(requirementId: string, id: string): Promise<RequirementCheckpointEntity | null> {
    return this.database.read(RequirementCheckpointEntity).findOneBy({ id, requirementId });
  }

  /** The Requirement's latest checkpoint, or null. */
  latest(requirementId: string): Promise<RequirementCheckpointEntity | null> {
    return this.database
      .read(RequirementCheckpointEntity)
      .createQueryBuilder('c')
      .where('c.requirement_id = :requirementId', { requirementId })
      .orderBy('c.at', 'DESC')
      .addOrderBy('c.id', 'DESC')
      .limit(1)
      .getOne();
  }

  /** The Requirement's checkpoints, oldest first (the newest CHECKPOINTS_LISTED). */
  async list(requirementId: string): Promise<RequirementCheckpointEntity[]> {
    const newest = await this.database
      .read(RequirementCheckpointEntity)
      .createQueryBuilder('c')
      .where('c.requirement_id = :requirementId', { requirementId })
      .orderBy('c.at', 'DESC')
      .addOrderBy('c.id', 'DESC')
      .limit(CHECKPOINTS_LISTED)
      .getMany();
    return newest.reverse();
  }
}
