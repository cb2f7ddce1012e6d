import { Injectable } from '@nestjs/common';

import { notFound } from '../core/errors/domain-error';
import type { PageRequest } from '../core/http/pagination';
import { EventsRepository } from '../events/events.repository';
import { RequirementsService, requirementNotFound } from '../requirements/requirements.service';
import { AgentRunPageDto, AgentTraceEventResponseDto, TracePageDto, toRunResponse } from './dto/run-response.dto';
import { ListRunsQueryDto } from './dto/run-requests.dto';
import { UsageQueryDto, UsageResponseDto } from './dto/usage.dto';
import { RunsRepository } from './runs.repository';

/** Reads of runs and their traces (the trace is the payload of run.trace.appended events). */
@Injectable()
export class RunsService {
  constructor(
    private readonly events: EventsRepository,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
  ) {}

  async list(query: ListRunsQueryDto): Promise<AgentRunPageDto> {
    const { nextCursor, rows } = await this.runs.page(query);
    return { items: rows.map(toRunResponse), nextCursor };
  }

  /** Token and cost totals of the runs started since a time and/or of one Requirement. */
  usage(query: UsageQueryDto): Promise<UsageResponseDto> {
    return this.runs.totals({
      requirementId: query.requirementId,
      since: query.since === undefined ? undefined : new Date(query.since).toISOString(),
    });
  }

  async runTrace(runId: string, query: PageRequest): Promise<TracePageDto> {
    if (!(await this.runs.exists(runId))) {
      throw notFound('run_not_found', `Run ${runId} not found`);
    }
    return this.trace({ runId }, query);
  }

  async requirementTrace(requirementId: string, query: PageRequest): Promise<TracePageDto> {
    if (!(await this.requirements.exists(requirementId))) {
      throw requirementNotFound(requirementId);
    }
    return this.trace({ requirementId }, query);
  }

  /** Trace entries ascending, paged by event id (which orders them across runs, too). */
  private async trace(scope: { runId: string } | { requirementId: string }, query: PageRequest): Promise<TracePageDto> {
    const { nextCursor, rows } = await this.events.pageOf('run.trace.appended', scope, query);
    return {
      items: rows.map((row) => (JSON.parse(row.payload) as { trace: AgentTraceEventResponseDto }).trace),
      nextCursor,
    };
  }
}
