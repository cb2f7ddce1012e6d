import { Injectable } from '@nestjs/common';
import { In, IsNull, Not } from 'typeorm';

import { type RequirementStatus, TERMINAL_REQUIREMENT_STATUSES } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage, newestFirst } from '../core/http/pagination';
import { isId } from '../core/ids';
import { SearchRepository } from '../search/search.repository';
import { RequirementLandingEntity } from './requirement-landing.entity';
import { AttentionItemEntity } from './attention-item.entity';
import { RequirementWorktreeEntity } from './requirement-worktree.entity';
import { AgentSessionEntity } from './agent-session.entity';
import { RequirementEntity } from './requirement.entity';
import { assertRequirementTransition, assertSessionTransition } from './requirement-state';

/** A Requirement row and its session row, as the write path holds them. */
export interface RequirementRows {
  requirement: RequirementEntity;
  session: AgentSessionEntity;
}

const cacheKey = (id: string) => `requirement:${id}`;
/** Ids per `IN (…)` list, well under SQLite's bound on a statement's parameters. */
const IN_LIST_MAX = 500;

/**
 * The `requirement` and `agent_session` tables: a Requirement and its one RD session are one
 * aggregate (invariant 1: created together, purged together). Nothing else names these tables.
 *
 * Writes keep the write cache exact: the rows a unit got from `loadForWrite` are the objects
 * `changeRequirement`/`changeSession` change in place while they stage the UPDATE, so snapshots
 * built from them afterwards need no re-read. RequirementLifecycle is the one caller of the
 * writes (the feature's own module alone provides this repository).
 */
@Injectable()
export class RequirementsRepository {
  constructor(
    private readonly database: Database,
    private readonly search: SearchRepository,
  ) {}

  /** Stages both rows of a new Requirement (one unit: invariant 1). */
  insert(uow: UnitOfWork, rows: RequirementRows): void {
    uow.insert(RequirementEntity, { ...rows.requirement });
    uow.insert(AgentSessionEntity, { ...rows.session });
    this.search.indexRequirement(uow, rows.requirement);
    uow.cache.set(cacheKey(rows.requirement.id), rows);
  }

  /**
   * A Requirement and its session for a write unit, from the write cache or in one query; null
   * when it does not exist. The write path is serialized, so what a unit gets here stays true
   * until it commits.
   */
  async loadForWrite(uow: UnitOfWork, id: string): Promise<RequirementRows | null> {
    const cached = uow.cache.get<RequirementRows>(cacheKey(id));
    if (cached) {
      return cached;
    }
    if (!isId('requirement', id)) {
      return null;
    }
    const requirement = await (
      await uow.reads()
    )
      .createQueryBuilder(RequirementEntity, 'r')
      .innerJoinAndMapOne('r.session', AgentSessionEntity, 's', 's.requirement_id = r.id')
      .leftJoinAndMapOne('r.worktree', RequirementWorktreeEntity, 'w', 'w.requirement_id = r.id')
      .leftJoinAndMapOne('r.landing', RequirementLandingEntity, 'l', 'l.requirement_id = r.id')
      .leftJoinAndMapMany('r.attention', AttentionItemEntity, 'a', 'a.requirement_id = r.id')
      .where('r.id = :id', { id })
      .getOne();
    if (!requirement?.session) {
      return null;
    }
    const { session } = requirement;
    delete requirement.session;
    requirement.worktree ??= null;
    requirement.landing ??= null;
    requirement.attention ??= [];
    const rows = { requirement, session };
    uow.cache.set(cacheKey(id), rows);
    return rows;
  }

  /** Changes the Requirement `requirement` (a row from loadForWrite) in place and stages it. */
  changeRequirement(uow: UnitOfWork, requirement: RequirementEntity, set: Partial<RequirementEntity>): void {
    if (set.status !== undefined) {
      assertRequirementTransition(requirement.id, requirement.status, set.status);
    }
    Object.assign(requirement, set);
    uow.update(RequirementEntity, set, { id: requirement.id });
    if (set.title !== undefined || set.description !== undefined) {
      this.search.reindexRequirement(uow, requirement);
    }
  }

  /** Changes the session `session` (a row from loadForWrite) in place and stages it. */
  changeSession(uow: UnitOfWork, session: AgentSessionEntity, set: Partial<AgentSessionEntity>): void {
    if (set.state !== undefined) {
      assertSessionTransition(session.id, session.state, set.state);
    }
    Object.assign(session, set);
    uow.update(AgentSessionEntity, set, { id: session.id });
  }

  /** The Requirement imported from an issue (its source key), inside a unit of work or committed; null: none. */
  async findBySourceKey(uow: UnitOfWork | null, key: string): Promise<string | null> {
    const manager = uow === null ? this.database.readManager : await uow.reads();
    const row = await manager.findOne(RequirementEntity, { select: { id: true }, where: { sourceKey: key } });
    return row?.id ?? null;
  }

  /** The Requirements imported from these issues, by source key. */
  async findBySourceKeys(keys: string[]): Promise<Map<string, string>> {
    if (keys.length === 0) {
      return new Map();
    }
    const rows = await this.database.readManager.find(RequirementEntity, {
      select: { id: true, sourceKey: true },
      where: { sourceKey: In(keys) },
    });
    return new Map(rows.map((row) => [row.sourceKey as string, row.id]));
  }

  /** Requirements imported from an issue that are not done or cancelled (committed). */
  findImportedOpen(): Promise<RequirementEntity[]> {
    return this.database.readManager.find(RequirementEntity, {
      where: { sourceKey: Not(IsNull()), status: Not(In([...TERMINAL_REQUIREMENT_STATUSES])) },
    });
  }

  /** One Requirement row, committed. */
  findById(id: string): Promise<RequirementEntity | null> {
    return isId('requirement', id)
      ? this.database.readManager.findOneBy(RequirementEntity, { id })
      : Promise.resolve(null);
  }

  async exists(id: string): Promise<boolean> {
    return isId('requirement', id) && (await this.database.read(RequirementEntity).exists({ where: { id } }));
  }

  /** Team mode: the ids of the Requirements a runner runs. */
  async idsRunBy(runnerId: string): Promise<string[]> {
    return (await this.database.read(RequirementEntity).find({ select: { id: true }, where: { runnerId } })).map(
      (row) => row.id,
    );
  }

  /** Only the status (an upload checks it before it streams a body). */
  async statusOf(id: string): Promise<RequirementStatus | null> {
    const row = isId('requirement', id)
      ? await this.database.read(RequirementEntity).findOne({ select: { id: true, status: true }, where: { id } })
      : null;
    return row?.status ?? null;
  }

  /** The Requirements whose session runs now (team mode: what a runner's going offline may touch). */
  async runningIds(): Promise<string[]> {
    const rows = await this.database
      .read(AgentSessionEntity)
      .find({ select: { requirementId: true }, where: { state: 'running' } });
    return rows.map((row) => row.requirementId);
  }

  findByIds(ids: string[]): Promise<RequirementEntity[]> {
    return ids.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(RequirementEntity, 'r')
          .where('r.id IN (:...ids)', { ids })
          .getMany();
  }

  /** Direct children, oldest first, at most `limit`. */
  children(parentId: string, limit: number): Promise<RequirementEntity[]> {
    return this.database
      .read(RequirementEntity)
      .createQueryBuilder('r')
      .where('r.parent_requirement_id = :parentId', { parentId })
      .orderBy('r.created_at', 'ASC')
      .addOrderBy('r.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /**
   * The Requirements below `id` (its children, theirs…) whose budget paused them, read level by
   * level: a raised budget resumes them. Bounded in depth; proposals nest a few levels, not thousands.
   */
  async budgetPausedBelow(id: string, maxDepth: number): Promise<string[]> {
    const paused: string[] = [];
    const seen = new Set([id]);
    let level = [id];
    for (let depth = 0; level.length > 0 && depth < maxDepth; depth++) {
      const next: string[] = [];
      for (let at = 0; at < level.length; at += IN_LIST_MAX) {
        const rows = await this.database
          .read(RequirementEntity)
          .createQueryBuilder('r')
          .select(['r.id', 'r.budgetReachedAt'])
          .where('r.parent_requirement_id IN (:...ids)', { ids: level.slice(at, at + IN_LIST_MAX) })
          .getMany();
        for (const row of rows) {
          if (!seen.has(row.id)) {
            seen.add(row.id);
            next.push(row.id);
            if (row.budgetReachedAt !== null) {
              paused.push(row.id);
            }
          }
        }
      }
      level = next;
    }
    return paused;
  }

  /** Newest first, optionally of one status. */
  page(query: PageRequest & { status?: RequirementStatus }): Promise<Page<RequirementEntity>> {
    const qb = this.database.read(RequirementEntity).createQueryBuilder('r');
    if (query.status) {
      qb.andWhere('r.status = :status', { status: query.status });
    }
    return keysetPage(qb, newestFirst('r'), 'DESC', query);
  }

  sessionsPage(query: PageRequest): Promise<Page<AgentSessionEntity>> {
    return keysetPage(this.database.read(AgentSessionEntity).createQueryBuilder('s'), newestFirst('s'), 'DESC', query);
  }

  /** The sessions of many Requirements in one query. */
  sessionsOf(requirementIds: string[]): Promise<AgentSessionEntity[]> {
    return requirementIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(AgentSessionEntity, 's')
          .where('s.requirement_id IN (:...ids)', { ids: requirementIds })
          .getMany();
  }

  /**
   * The worktree rows of many Requirements, for their snapshots (read only: the worktrees
   * repository alone writes them; `loadForWrite` joins the same row for the same reason).
   */
  worktreesOf(requirementIds: string[]): Promise<RequirementWorktreeEntity[]> {
    return requirementIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(RequirementWorktreeEntity, 'w')
          .where('w.requirement_id IN (:...ids)', { ids: requirementIds })
          .getMany();
  }

  /** The landing rows of many Requirements, for their snapshots (read only: the landing feature alone writes them). */
  landingsOf(requirementIds: string[]): Promise<RequirementLandingEntity[]> {
    return requirementIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(RequirementLandingEntity, 'l')
          .where('l.requirement_id IN (:...ids)', { ids: requirementIds })
          .getMany();
  }

  /** The open attention items of many Requirements, for their snapshots (read only: the attention feature alone writes them). */
  attentionOf(requirementIds: string[]): Promise<AttentionItemEntity[]> {
    return requirementIds.length === 0
      ? Promise.resolve([])
      : this.database.readManager
          .createQueryBuilder(AttentionItemEntity, 'a')
          .where('a.requirement_id IN (:...ids)', { ids: requirementIds })
          .getMany();
  }

  /**
   * Terminal Requirements past their retention whose session is not running, oldest first:
   * cancelled ones last changed before `cancelledBefore`, done ones completed before `doneBefore`.
   */
  async dueForPurge(uow: UnitOfWork, cancelledBefore: string, doneBefore: string, limit: number): Promise<string[]> {
    const rows = await (
      await uow.reads()
    )
      .createQueryBuilder(RequirementEntity, 'r')
      .innerJoin(AgentSessionEntity, 's', 's.requirement_id = r.id')
      .select('r.id', 'id')
      .where("s.state <> 'running'")
      .andWhere(
        "((r.status = 'cancelled' AND r.updated_at < :cancelledBefore) OR (r.status = 'done' AND COALESCE(r.completed_at, r.updated_at) < :doneBefore))",
        {
          cancelledBefore,
          doneBefore,
        },
      )
      .orderBy('r.updated_at')
      .limit(limit)
      .getRawMany<{ id: string }>();
    return rows.map((row) => row.id);
  }

  /**
   * Stages the removal of these Requirements; their session, conversation, attachment rows and
   * runs go with them (ON DELETE CASCADE). Their events belong to the events repository.
   */
  delete(uow: UnitOfWork, ids: string[]): void {
    this.search.forget(uow, ids);
    uow.delete(RequirementEntity, { id: ids });
    for (const id of ids) {
      uow.cache.delete(cacheKey(id));
    }
  }
}
