import { Injectable } from '@nestjs/common';

import type { RunStatus } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import { Database } from '../core/database/database.service';
import type { UnitOfWork, WhereOf } from '../core/database/unit-of-work';
import { KeysetColumn, Page, PageRequest, keysetPage } from '../core/http/pagination';
import { isId } from '../core/ids';
import { AgentRunEntity } from './agent-run.entity';

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

  /** The usage other Codex runs of a session recorded, as the unit sees them. */
  async codexUsageOfSessionExcept(uow: UnitOfWork, sessionId: string, runId: string): Promise<TokenUsage> {
    const row = await (
      await uow.reads()
    )
      .createQueryBuilder(AgentRunEntity, 'r')
      .select('COALESCE(SUM(r.input_tokens), 0)', 'input')
      .addSelect('COALESCE(SUM(r.cached_input_tokens), 0)', 'cached')
      .addSelect('COALESCE(SUM(r.output_tokens), 0)', 'output')
      .addSelect('COALESCE(SUM(r.reasoning_output_tokens), 0)', 'reasoning')
      .where("r.session_id = :sessionId AND r.id <> :runId AND r.provider = 'codex'", { runId, sessionId })
      .getRawOne<{ input: number; cached: number; output: number; reasoning: number }>();
    return {
      cachedInputTokens: Number(row?.cached ?? 0),
      inputTokens: Number(row?.input ?? 0),
      outputTokens: Number(row?.output ?? 0),
      reasoningOutputTokens: Number(row?.reasoning ?? 0),
    };
  }
}
