import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import { notFound } from '../core/errors/domain-error';
import { KeysetColumn, keysetPage } from '../core/http/pagination';
import { isId } from '../core/ids';
import { ManagerEventEntity } from '../events/manager-event.entity';
import { RequirementEntity } from '../requirements/requirement.entity';
import { requirementNotFound } from '../requirements/requirements.service';
import { AgentRunEntity } from './agent-run.entity';
import { AgentRunPageDto, AgentTraceEventResponseDto, TracePageDto, toRunResponse } from './dto/run-response.dto';
import { ListRunsQueryDto } from './dto/run-requests.dto';

/** Reads of runs and their traces (the trace is the payload of run.trace.appended events). */
/** Runs newest first by start time, the id breaking ties. */
const RUN_ORDER: Array<KeysetColumn<AgentRunEntity>> = [
  { column: 'r.started_at', type: 'string', value: (run) => run.startedAt },
  { column: 'r.id', type: 'string', value: (run) => run.id },
];

@Injectable()
export class RunsService {
  constructor(private readonly database: Database) {}

  async list(query: ListRunsQueryDto): Promise<AgentRunPageDto> {
    const qb = this.database.read(AgentRunEntity).createQueryBuilder('r');
    if (query.requirementId !== undefined) {
      qb.andWhere('r.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    const { nextCursor, rows } = await keysetPage(qb, RUN_ORDER, 'DESC', query);
    return { items: rows.map(toRunResponse), nextCursor };
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
    const qb = this.database.read(ManagerEventEntity).createQueryBuilder('e').where(where, { id }).andWhere(`e.type = 'run.trace.appended'`);
    const { nextCursor, rows } = await keysetPage(qb, [{ column: 'e.id', type: 'number', value: (row) => row.id }], 'ASC', query);
    return { items: rows.map((row) => (JSON.parse(row.payload) as { trace: AgentTraceEventResponseDto }).trace), nextCursor };
  }
}
