import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import { notFound } from '../core/errors/domain-error';
import { decodeCursor, encodeCursor, pageSize } from '../core/http/pagination';
import { isId } from '../core/ids';
import { ManagerEventEntity } from '../events/manager-event.entity';
import { RequirementEntity } from '../requirements/requirement.entity';
import { requirementNotFound } from '../requirements/requirements.service';
import { AgentRunEntity } from './agent-run.entity';
import { AgentRunPageDto, AgentTraceEventResponseDto, TracePageDto, toRunResponse } from './dto/run-response.dto';
import { ListRunsQueryDto } from './dto/run-requests.dto';

/** Reads of runs and their traces (the trace is the payload of run.trace.appended events). */
@Injectable()
export class RunsService {
  constructor(private readonly database: Database) {}

  async list(query: ListRunsQueryDto): Promise<AgentRunPageDto> {
    const limit = pageSize(query.limit);
    const after = decodeCursor<[string, string]>(query.cursor, ['string', 'string']);
    const qb = this.database.read(AgentRunEntity).createQueryBuilder('r');
    if (query.requirementId !== undefined) {
      qb.andWhere('r.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    if (after) {
      qb.andWhere('(r.started_at < :at OR (r.started_at = :at AND r.id < :id))', { at: after[0], id: after[1] });
    }
    const rows = await qb.orderBy('r.started_at', 'DESC').addOrderBy('r.id', 'DESC').limit(limit + 1).getMany();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toRunResponse), nextCursor: rows.length > limit && last ? encodeCursor([last.startedAt, last.id]) : null };
  }

  async runTrace(runId: string, query: { limit?: number; cursor?: string }): Promise<TracePageDto> {
    const exists = isId('run', runId) && (await this.database.read(AgentRunEntity).exists({ where: { id: runId } }));
    if (!exists) {
      throw notFound('run_not_found', `Run ${runId} not found`);
    }
    return this.trace('e.run_id = :id', runId, query);
  }

  async requirementTrace(requirementId: string, query: { limit?: number; cursor?: string }): Promise<TracePageDto> {
    const exists = isId('requirement', requirementId) && (await this.database.read(RequirementEntity).exists({ where: { id: requirementId } }));
    if (!exists) {
      throw requirementNotFound(requirementId);
    }
    return this.trace('e.requirement_id = :id', requirementId, query);
  }

  /** Trace entries ascending, paged by event id (which orders them across runs, too). */
  private async trace(where: string, id: string, query: { limit?: number; cursor?: string }): Promise<TracePageDto> {
    const limit = pageSize(query.limit);
    const after = decodeCursor<[number]>(query.cursor, ['number'])?.[0] ?? 0;
    const rows = await this.database
      .read(ManagerEventEntity)
      .createQueryBuilder('e')
      .where(where, { id })
      .andWhere(`e.type = 'run.trace.appended' AND e.id > :after`, { after })
      .orderBy('e.id', 'ASC')
      .limit(limit + 1)
      .getMany();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((row) => (JSON.parse(row.payload) as { trace: AgentTraceEventResponseDto }).trace),
      nextCursor: rows.length > limit && last ? encodeCursor([last.id]) : null,
    };
  }
}
