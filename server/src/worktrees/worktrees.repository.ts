import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';

/** The only place that reads and writes `requirement_worktree`. */
@Injectable()
export class WorktreesRepository {
  constructor(private readonly database: Database) {}

  find(requirementId: string): Promise<RequirementWorktreeEntity | null> {
    return this.database
      .read(RequirementWorktreeEntity)
      .createQueryBuilder('w')
      .where('w.requirement_id = :requirementId', { requirementId })
      .getOne();
  }

  /** The row as a write unit sees it (it exists: every Requirement has one from its creation or adoption). */
  async findForWrite(uow: UnitOfWork, requirementId: string): Promise<RequirementWorktreeEntity> {
    return (await uow.reads()).findOneByOrFail(RequirementWorktreeEntity, { requirementId });
  }

  /** The rows of some Requirements (a page of snapshots, a purge batch), through the given manager. */
  async findMany(manager: EntityManager, requirementIds: readonly string[]): Promise<RequirementWorktreeEntity[]> {
    if (requirementIds.length === 0) {
      return [];
    }
    return manager
      .createQueryBuilder(RequirementWorktreeEntity, 'w')
      .where('w.requirement_id IN (:...ids)', { ids: [...requirementIds] })
      .getMany();
  }

  /** Worktrees that exist on disk (or are being created): what the startup sweep keeps. */
  async livePaths(): Promise<string[]> {
    const rows = await this.database
      .read(RequirementWorktreeEntity)
      .createQueryBuilder('w')
      .select(['w.path'])
      .where('w.path IS NOT NULL AND w.removed_at IS NULL')
      .getMany();
    return rows.map((r) => r.path as string);
  }

  /** Created worktrees without a run since `before` (the idle sweep checks each one's Requirement). */
  idleSince(before: string, limit: number): Promise<RequirementWorktreeEntity[]> {
    return this.database
      .read(RequirementWorktreeEntity)
      .createQueryBuilder('w')
      .where(`w.isolation = 'worktree' AND w.path IS NOT NULL AND w.removed_at IS NULL AND w.created_at IS NOT NULL`)
      .andWhere('COALESCE(w.last_run_at, w.created_at) < :before', { before })
      .orderBy('w.updated_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Whether a Requirement's branch is named so (the person may have checked one out to look at it). */
  async branchOfRequirement(branch: string): Promise<boolean> {
    const row = await this.database
      .read(RequirementWorktreeEntity)
      .createQueryBuilder('w')
      .where('w.branch = :branch', { branch })
      .getOne();
    return row !== null;
  }

  async pathTaken(path: string, requirementId: string): Promise<boolean> {
    const row = await this.database
      .read(RequirementWorktreeEntity)
      .createQueryBuilder('w')
      .where('w.path = :path AND w.requirement_id <> :requirementId', { path, requirementId })
      .getOne();
    return row !== null;
  }

  /** Port blocks held by other Requirements, ascending. */
  async usedPortBases(uow: UnitOfWork): Promise<number[]> {
    const manager = await uow.reads();
    const rows = await manager
      .createQueryBuilder(RequirementWorktreeEntity, 'w')
      .select(['w.portBase'])
      .where('w.port_base IS NOT NULL')
      .orderBy('w.port_base', 'ASC')
      .getMany();
    return rows.map((r) => r.portBase as number);
  }

  insert(uow: UnitOfWork, row: RequirementWorktreeEntity): void {
    uow.insert(RequirementWorktreeEntity, { ...row });
  }

  update(uow: UnitOfWork, requirementId: string, set: Partial<RequirementWorktreeEntity>): void {
    uow.update(RequirementWorktreeEntity, set, { requirementId });
  }
}
