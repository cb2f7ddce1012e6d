import { Injectable } from '@nestjs/common';

import type { Provider, RunStatus } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import { Database } from '../core/database/database.service';
import type { UnitOfWork, WhereOf } from '../core/database/unit-of-work';
import { KeysetColumn, Page, PageRequest, keysetPage } from '../core/http/pagination';
import { isId } from '../core/ids';
import { AgentRunEntity } from './agent-run.entity';
import type { UsageResponseDto } from './dto/usage.dto';

/** Runs newest first by start time, the id breaking ties. */
const RUN_ORDER: Array<KeysetColumn<AgentRunEntity>> = [
  { column: 'r.started_at', type: 'string', value: (run) => run.startedAt },
  { column: 'r.id', type: 'string', value: (run) => run.id },
];

/** The `agent_run` table: RD and reviewer runs. Nothing else names it. */
@Injectable()
export class RunsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, run: AgentRunEntity): void {
    uow.insert(AgentRunEntity, { ...run });
  }

  /** Changes `run` (the row a unit or an active run holds) in place and stages it. */
  change(uow: UnitOfWork, run: AgentRunEntity, set: Partial<AgentRunEntity>): AgentRunEntity {
    uow.update(AgentRunEntity, set, { id: run.id });
    return Object.assign(run, set);
  }

  /** Stages a change of the runs that match `where` (a run known by id, or only while it is still running). */
  update(uow: UnitOfWork, set: Partial<AgentRunEntity>, where: WhereOf<AgentRunEntity>): void {
    uow.update(AgentRunEntity, set, where);
  }

  async exists(id: string): Promise<boolean> {
    return isId('run', id) && (await this.database.read(AgentRunEntity).exists({ where: { id } }));
  }

  /** Runs in a given state (committed): what a start finds left `running` by a stopped manager. */
  withStatus(status: RunStatus): Promise<AgentRunEntity[]> {
    return this.database.read(AgentRunEntity).findBy({ status });
  }

  page(query: PageRequest & { requirementId?: string }): Promise<Page<AgentRunEntity>> {
    const qb = this.database.read(AgentRunEntity).createQueryBuilder('r');
    if (query.requirementId !== undefined) {
      qb.andWhere('r.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    return keysetPage(qb, RUN_ORDER, 'DESC', query);
  }

  /** The usage other runs of a session by the same provider recorded, as the unit sees them (cost included). */
  async usageOfSessionExcept(
    uow: UnitOfWork,
    sessionId: string,
    runId: string,
    provider: Provider,
  ): Promise<TokenUsage & { costUsd: number }> {
    const row = await (
      await uow.reads()
    )
      .createQueryBuilder(AgentRunEntity, 'r')
      .select('COALESCE(SUM(r.input_tokens), 0)', 'input')
      .addSelect('COALESCE(SUM(r.cached_input_tokens), 0)', 'cached')
      .addSelect('COALESCE(SUM(r.output_tokens), 0)', 'output')
      .addSelect('COALESCE(SUM(r.reasoning_output_tokens), 0)', 'reasoning')
      .addSelect('COALESCE(SUM(r.cost_usd), 0)', 'cost')
      .where('r.session_id = :sessionId AND r.id <> :runId AND r.provider = :provider', { provider, runId, sessionId })
      .getRawOne<{ input: number; cached: number; output: number; reasoning: number; cost: number }>();
    return {
      cachedInputTokens: Number(row?.cached ?? 0),
      costUsd: Number(row?.cost ?? 0),
      inputTokens: Number(row?.input ?? 0),
      outputTokens: Number(row?.output ?? 0),
      reasoningOutputTokens: Number(row?.reasoning ?? 0),
    };
  }

  /**
   * Token and cost totals over the runs started at or after `since` and/or of one Requirement:
   * one aggregate over an index range (idx_run_started_at, or idx_run_requirement).
   */
  async totals(filter: { since?: string; requirementId?: string }): Promise<UsageResponseDto> {
    const qb = this.database
      .read(AgentRunEntity)
      .createQueryBuilder('r')
      .select('COUNT(*)', 'runs')
      .addSelect('COALESCE(SUM(r.input_tokens), 0)', 'inputTokens')
      .addSelect('COALESCE(SUM(r.cached_input_tokens), 0)', 'cachedInputTokens')
      .addSelect('COALESCE(SUM(r.output_tokens), 0)', 'outputTokens')
      .addSelect('SUM(r.cost_usd)', 'costUsd')
      .addSelect('COUNT(r.cost_usd)', 'costReportedRuns');
    if (filter.since !== undefined) {
      qb.andWhere('r.started_at >= :since', { since: filter.since });
    }
    if (filter.requirementId !== undefined) {
      qb.andWhere('r.requirement_id = :requirementId', { requirementId: filter.requirementId });
    }
    const row = await qb.getRawOne<Record<keyof UsageResponseDto, number | string | null>>();
    const n = (v: number | string | null | undefined) => Number(v ?? 0);
    return {
      cachedInputTokens: n(row?.cachedInputTokens),
      costReportedRuns: n(row?.costReportedRuns),
      costUsd: row?.costUsd === null || row?.costUsd === undefined ? null : Number(row.costUsd),
      inputTokens: n(row?.inputTokens),
      outputTokens: n(row?.outputTokens),
      runs: n(row?.runs),
    };
  }
}
