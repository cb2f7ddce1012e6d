import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementDependencyEntity } from './requirement-dependency.entity';

const cacheKey = (dependentId: string) => `dependencies:${dependentId}`;

/**
 * The `requirement_dependency` table: which Requirements wait for which. Nothing else names it.
 * A dependent's rows are cached between units under one key (every Requirement write loads
 * them for its snapshot); every write here goes through `ofDependentIn`'s objects, which keeps
 * that cache exact.
 */
@Injectable()
export class DependenciesRepository {
  constructor(private readonly database: Database) {}

  /** A dependent's rows as the unit sees them (oldest first), from the write cache or one query. */
  async ofDependentIn(uow: UnitOfWork, dependentId: string): Promise<RequirementDependencyEntity[]> {
    const cached = uow.cache.get<RequirementDependencyEntity[]>(cacheKey(dependentId));
    if (cached) {
      return cached;
    }
    const rows = await (
      await uow.reads()
    )
      .createQueryBuilder(RequirementDependencyEntity, 'd')
      .where('d.requirement_id = :dependentId', { dependentId })
      .orderBy('d.created_at', 'ASC')
      .addOrderBy('d.depends_on_requirement_id', 'ASC')
      .getMany();
    uow.cache.set(cacheKey(dependentId), rows);
    return rows;
  }

  /** The rows of many dependents in one query, committed. */
  ofDependents(dependentIds: string[]): Promise<RequirementDependencyEntity[]> {
    return dependentIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(RequirementDependencyEntity, 'd')
          .where('d.requirement_id IN (:...ids)', { ids: dependentIds })
          .orderBy('d.created_at', 'ASC')
          .addOrderBy('d.depends_on_requirement_id', 'ASC')
          .getMany();
  }

  /** Who waits for `dependencyId`, as the unit sees it. */
  async dependentsOfIn(
    uow: UnitOfWork,
    dependencyId: string,
    state?: RequirementDependencyEntity['state'],
  ): Promise<string[]> {
    const qb = (await uow.reads())
      .createQueryBuilder(RequirementDependencyEntity, 'd')
      .select('d.requirement_id', 'id')
      .where('d.depends_on_requirement_id = :dependencyId', { dependencyId });
    if (state) {
      qb.andWhere('d.state = :state', { state });
    }
    return (await qb.getRawMany<{ id: string }>()).map((row) => row.id);
  }

  /** What the Requirements `ids` depend on (one step along the edges), as the unit sees it. */
  async targetsOfIn(uow: UnitOfWork, ids: string[]): Promise<string[]> {
    if (ids.length === 0) {
      return [];
    }
    const rows = await (
      await uow.reads()
    )
      .createQueryBuilder(RequirementDependencyEntity, 'd')
      .select('DISTINCT d.depends_on_requirement_id', 'id')
      .where('d.requirement_id IN (:...ids)', { ids })
      .getRawMany<{ id: string }>();
    return rows.map((row) => row.id);
  }

  /** Resolved dependencies whose dependent was not told yet (a crash between the two), oldest first. */
  unnotified(limit: number): Promise<RequirementDependencyEntity[]> {
    return this.database
      .read(RequirementDependencyEntity)
      .createQueryBuilder('d')
      .where("d.state <> 'pending' AND d.notified_at IS NULL")
      .orderBy('d.resolved_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /**
   * Before Requirements `ids` are purged (their rows go by ON DELETE CASCADE): drops the cached
   * rows of every dependent that names one of them, so no snapshot shows a row that is gone.
   */
  async forgetPurged(uow: UnitOfWork, ids: string[]): Promise<void> {
    if (ids.length === 0) {
      return;
    }
    const rows = await (
      await uow.reads()
    )
      .createQueryBuilder(RequirementDependencyEntity, 'd')
      .select('DISTINCT d.requirement_id', 'id')
      .where('d.depends_on_requirement_id IN (:...ids)', { ids })
      .getRawMany<{ id: string }>();
    for (const id of [...ids, ...rows.map((row) => row.id)]) {
      uow.cache.delete(cacheKey(id));
    }
  }

  /** Replaces a dependent's rows with `rows` (all of them its own). */
  async replace(uow: UnitOfWork, dependentId: string, rows: RequirementDependencyEntity[]): Promise<void> {
    const current = await this.ofDependentIn(uow, dependentId);
    if (current.length > 0) {
      uow.delete(RequirementDependencyEntity, { requirementId: dependentId });
    }
    for (const row of rows) {
      uow.insert(RequirementDependencyEntity, { ...row });
    }
    uow.cache.set(cacheKey(dependentId), rows);
  }

  /** Changes one row of `dependentId` in place (in the unit's cached list) and stages it. */
  async change(
    uow: UnitOfWork,
    dependentId: string,
    dependencyId: string,
    set: Partial<RequirementDependencyEntity>,
  ): Promise<RequirementDependencyEntity | null> {
    const rows = await this.ofDependentIn(uow, dependentId);
    const row = rows.find((r) => r.dependsOnRequirementId === dependencyId);
    if (!row) {
      return null;
    }
    Object.assign(row, set);
    uow.update(RequirementDependencyEntity, set, { dependsOnRequirementId: dependencyId, requirementId: dependentId });
    uow.cache.set(cacheKey(dependentId), rows);
    return row;
  }
}
