import { Injectable } from '@nestjs/common';

import type { TimerStatus } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork, WhereOf } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage, newestFirst } from '../core/http/pagination';
import { AgentTimerEntity } from './agent-timer.entity';

/** The `agent_timer` table: agent timers. Nothing else names it. */
@Injectable()
export class TimersRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, timer: AgentTimerEntity): void {
    uow.insert(AgentTimerEntity, { ...timer });
  }

  /** Stages a change of the timers that match `where`. */
  update(uow: UnitOfWork, set: Partial<AgentTimerEntity>, where: WhereOf<AgentTimerEntity>): void {
    uow.update(AgentTimerEntity, set, where);
  }

  /** A timer as the unit sees it (of one Requirement, when given). */
  async findIn(uow: UnitOfWork, where: { id: string; requirementId?: string }): Promise<AgentTimerEntity | null> {
    return (await uow.reads()).findOneBy(AgentTimerEntity, where);
  }

  /** A Requirement's active timers, as the unit sees them. */
  async activeOfIn(uow: UnitOfWork, requirementId: string): Promise<AgentTimerEntity[]> {
    return (await uow.reads()).findBy(AgentTimerEntity, { requirementId, status: 'active' });
  }

  page(query: PageRequest & { requirementId?: string; status?: TimerStatus }): Promise<Page<AgentTimerEntity>> {
    const qb = this.database.read(AgentTimerEntity).createQueryBuilder('t');
    if (query.requirementId !== undefined) {
      qb.andWhere('t.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    if (query.status) {
      qb.andWhere('t.status = :status', { status: query.status });
    }
    return keysetPage(qb, newestFirst('t'), 'DESC', query);
  }

  /** When the earliest active timer is due (ISO time), or null when none is active. */
  async nextFireAt(): Promise<string | null> {
    const row = await this.database
      .read(AgentTimerEntity)
      .createQueryBuilder('t')
      .select('t.next_fire_at', 'at')
      .where("t.status = 'active'")
      .orderBy('t.next_fire_at')
      .limit(1)
      .getRawOne<{ at: string | null }>();
    return row?.at ?? null;
  }

  /** Active timers due at `now`, earliest first, at most `limit`. */
  due(now: string, limit: number): Promise<AgentTimerEntity[]> {
    return this.database
      .read(AgentTimerEntity)
      .createQueryBuilder('t')
      .where("t.status = 'active' AND t.next_fire_at <= :now", { now })
      .orderBy('t.next_fire_at')
      .limit(limit)
      .getMany();
  }
}
