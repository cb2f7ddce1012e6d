import { Injectable } from '@nestjs/common';

import type { RequirementStatus } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { RequirementLandingEntity } from '../requirements/requirement-landing.entity';
import { RequirementWorktreeEntity } from '../requirements/requirement-worktree.entity';
import { RequirementEntity } from '../requirements/requirement.entity';
import { LandingQueueEntity } from './landing-queue.entity';

/** A Requirement the radar looks at: its title and status, where its branch is, and its last answer. */
export interface RadarCandidate {
  requirementId: string;
  title: string;
  status: RequirementStatus;
  branch: string;
  baseRef: string | null;
  baseSha: string | null;
  /** What the last import of its work brought: the branch's head, and that head with its uncommitted files (when dirty). */
  headSha: string | null;
  workSha: string | null;
  dirty: boolean;
  refreshedAt: string | null;
  landing: RequirementLandingEntity | null;
}

const emptyLanding = (requirementId: string, updatedAt: string): RequirementLandingEntity => ({
  baseSha: null,
  behindBy: null,
  checkedAt: null,
  conflictPaths: [],
  conflictsWith: [],
  headSha: null,
  landedAt: null,
  landedCommit: null,
  landedMethod: null,
  landedWork: null,
  mergesCleanly: null,
  pendingBaseRef: null,
  pendingCommit: null,
  pendingMethod: null,
  requirementId,
  updatedAt,
});

/** The only place that reads and writes `requirement_landing` and `landing_queue`. */
@Injectable()
export class LandingRepository {
  constructor(private readonly database: Database) {}

  /** Every Requirement with a branch of its own that is not cancelled: what the radar may look at. */
  async candidates(): Promise<RadarCandidate[]> {
    const rows = await this.database
      .read(RequirementEntity)
      .createQueryBuilder('r')
      .innerJoinAndMapOne('r.worktree', RequirementWorktreeEntity, 'w', 'w.requirement_id = r.id')
      .leftJoinAndMapOne('r.landing', RequirementLandingEntity, 'l', 'l.requirement_id = r.id')
      .where(`w.isolation = 'worktree' AND w.branch IS NOT NULL AND r.status <> 'cancelled'`)
      .orderBy('r.created_at', 'ASC')
      .getMany();
    return rows.map((r) => {
      const w = r.worktree as RequirementWorktreeEntity;
      return {
        baseRef: w.baseRef,
        baseSha: w.baseSha,
        branch: w.branch as string,
        dirty: Boolean(w.dirty),
        headSha: w.headSha,
        // SQLite hands booleans back as 0/1.
        landing: r.landing
          ? { ...r.landing, mergesCleanly: r.landing.mergesCleanly === null ? null : Boolean(r.landing.mergesCleanly) }
          : null,
        refreshedAt: w.refreshedAt,
        requirementId: r.id,
        status: r.status,
        title: r.title,
        workSha: w.workSha,
      };
    });
  }

  find(requirementId: string): Promise<RequirementLandingEntity | null> {
    return this.database
      .read(RequirementLandingEntity)
      .createQueryBuilder('l')
      .where('l.requirement_id = :requirementId', { requirementId })
      .getOne();
  }

  async findForWrite(uow: UnitOfWork, requirementId: string): Promise<RequirementLandingEntity | null> {
    return (await uow.reads()).findOneBy(RequirementLandingEntity, { requirementId });
  }

  /** Rows with a land in flight (recorded before the base moved). */
  pending(): Promise<RequirementLandingEntity[]> {
    return this.database
      .read(RequirementLandingEntity)
      .createQueryBuilder('l')
      .where('l.pending_commit IS NOT NULL')
      .getMany();
  }

  /** Writes `set` onto the row (made first when the Requirement has none); returns the row as written. */
  async save(
    uow: UnitOfWork,
    requirementId: string,
    set: Partial<RequirementLandingEntity>,
    now: string,
  ): Promise<RequirementLandingEntity> {
    const current = await this.findForWrite(uow, requirementId);
    const next = { ...(current ?? emptyLanding(requirementId, now)), ...set, updatedAt: now };
    if (current === null) {
      uow.insert(RequirementLandingEntity, next);
    } else {
      uow.update(RequirementLandingEntity, { ...set, updatedAt: now }, { requirementId });
    }
    return next;
  }

  queue(): Promise<Array<LandingQueueEntity & { title: string }>> {
    return this.database
      .read(LandingQueueEntity)
      .createQueryBuilder('q')
      .innerJoin(RequirementEntity, 'r', 'r.id = q.requirement_id')
      .addSelect('r.title', 'title')
      .orderBy('q.position', 'ASC')
      .getRawAndEntities()
      .then(({ entities, raw }) =>
        entities.map((e, i) => ({ ...e, title: String((raw[i] as { title: string }).title) })),
      );
  }

  async isQueued(requirementId: string): Promise<boolean> {
    return (
      (await this.database
        .read(LandingQueueEntity)
        .createQueryBuilder('q')
        .where('q.requirement_id = :requirementId', { requirementId })
        .getCount()) > 0
    );
  }

  async queueForWrite(uow: UnitOfWork): Promise<LandingQueueEntity[]> {
    return (await uow.reads()).createQueryBuilder(LandingQueueEntity, 'q').orderBy('q.position', 'ASC').getMany();
  }

  insertQueued(uow: UnitOfWork, row: LandingQueueEntity): void {
    uow.insert(LandingQueueEntity, row);
  }

  updateQueued(uow: UnitOfWork, requirementId: string, set: Partial<LandingQueueEntity>): void {
    uow.update(LandingQueueEntity, set, { requirementId });
  }

  deleteQueued(uow: UnitOfWork, requirementId: string): void {
    uow.delete(LandingQueueEntity, { requirementId });
  }
}
