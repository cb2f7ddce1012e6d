import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

import type { EventActor, RequirementCreator } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { WriteTx } from '../core/database/write-tx';
import { conflict, notFound } from '../core/errors/domain-error';
import { decodeCursor, encodeCursor, pageSize } from '../core/http/pagination';
import { isId, newId } from '../core/ids';
import { EventLog } from '../events/event-log.service';
import { AgentSessionEntity } from './agent-session.entity';
import { CreateRequirementDto } from './dto/create-requirement.dto';
import { ListRequirementsQueryDto } from './dto/list-requirements-query.dto';
import {
  AgentSessionPageDto,
  RequirementPageDto,
  RequirementResponseDto,
  toRequirementResponse,
  toSessionResponse,
} from './dto/requirement-response.dto';
import { RequirementEntity } from './requirement.entity';

export interface NewRequirement extends CreateRequirementDto {
  createdBy: RequirementCreator;
  parentRequirementId?: string | null;
  sourceSessionId?: string | null;
}

export const requirementNotFound = (id: string) => notFound('requirement_not_found', `Requirement ${id} not found`);

/**
 * Requirements and their RD sessions: creation (both rows in one transaction), the human
 * state transitions, and the snapshots every Requirement event carries.
 */
@Injectable()
export class RequirementsService {
  private readonly logger = new Logger(RequirementsService.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
  ) {}

  async create(input: NewRequirement, actor: EventActor): Promise<RequirementResponseDto> {
    const created = await this.database.write(async (tx) => {
      const now = this.clock.nowIso();
      const requirement: RequirementEntity = {
        completedAt: null,
        createdAt: now,
        createdBy: input.createdBy,
        description: input.description ?? '',
        id: newId('requirement'),
        lastMessageSequence: 0,
        model: input.model ?? null,
        parentRequirementId: input.parentRequirementId ?? null,
        provider: input.provider,
        reasoningEffort: input.reasoningEffort ?? null,
        sourceSessionId: input.sourceSessionId ?? null,
        status: 'todo',
        title: input.title,
        updatedAt: now,
      };
      const session: AgentSessionEntity = {
        createdAt: now,
        id: newId('session'),
        lastConsumedMessageSequence: 0,
        lastError: null,
        nativeSessionId: null,
        provider: input.provider,
        requirementId: requirement.id,
        state: 'idle',
        updatedAt: now,
      };
      await tx.manager.insert(RequirementEntity, requirement);
      await tx.manager.insert(AgentSessionEntity, session);
      const snapshot = toRequirementResponse(requirement, session, 0);
      await this.events.append(tx, {
        actor,
        payload: { requirement: snapshot },
        requirementId: requirement.id,
        sessionId: session.id,
        type: 'requirement.created',
      });
      return snapshot;
    });
    this.logger.log({ actor: actor.kind, msg: 'requirement created', requirementId: created.id });
    return created;
  }

  async get(id: string): Promise<RequirementResponseDto> {
    const snapshot = isId('requirement', id) ? await this.snapshot(this.database.readManager, id) : null;
    if (!snapshot) {
      throw requirementNotFound(id);
    }
    return snapshot;
  }

  async list(query: ListRequirementsQueryDto): Promise<RequirementPageDto> {
    const limit = pageSize(query.limit);
    const after = decodeCursor<[string, string]>(query.cursor, ['string', 'string']);
    const qb = this.database.read(RequirementEntity).createQueryBuilder('r');
    if (query.status) {
      qb.andWhere('r.status = :status', { status: query.status });
    }
    if (after) {
      qb.andWhere('(r.created_at < :at OR (r.created_at = :at AND r.id < :id))', { at: after[0], id: after[1] });
    }
    const rows = await qb.orderBy('r.created_at', 'DESC').addOrderBy('r.id', 'DESC').limit(limit + 1).getMany();
    const page = rows.slice(0, limit);
    const items = await this.snapshots(this.database.readManager, page);
    const last = page[page.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null };
  }

  async listSessions(query: { limit?: number; cursor?: string }): Promise<AgentSessionPageDto> {
    const limit = pageSize(query.limit);
    const after = decodeCursor<[string, string]>(query.cursor, ['string', 'string']);
    const qb = this.database.read(AgentSessionEntity).createQueryBuilder('s');
    if (after) {
      qb.andWhere('(s.created_at < :at OR (s.created_at = :at AND s.id < :id))', { at: after[0], id: after[1] });
    }
    const rows = await qb.orderBy('s.created_at', 'DESC').addOrderBy('s.id', 'DESC').limit(limit + 1).getMany();
    const page = rows.slice(0, limit);
    const pending = await this.pendingCounts(this.database.readManager, page);
    const last = page[page.length - 1];
    return {
      items: page.map((s) => toSessionResponse(s, pending.get(s.id) ?? 0)),
      nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null,
    };
  }

  /** DELETE: only a Requirement that never started can be withdrawn; it becomes `cancelled`. */
  async cancel(id: string, actor: EventActor): Promise<void> {
    await this.database.write(async (tx) => {
      const requirement = await this.lockForUpdate(tx, id);
      if (requirement.status !== 'todo') {
        throw conflict('requirement_started', `Requirement ${id} is ${requirement.status}; only a todo Requirement can be deleted`);
      }
      const now = this.clock.nowIso();
      await tx.manager.update(RequirementEntity, { id }, { status: 'cancelled', updatedAt: now });
      const snapshot = await this.mustSnapshot(tx.manager, id);
      await this.events.append(tx, {
        actor,
        payload: { requirement: snapshot },
        requirementId: id,
        sessionId: snapshot.session.id,
        type: 'requirement.deleted',
      });
    });
    this.logger.log({ actor: actor.kind, msg: 'requirement cancelled', requirementId: id });
  }

  /** A person accepts the work: waiting_confirmation → done, the session completes. */
  async confirm(id: string, actor: EventActor): Promise<RequirementResponseDto> {
    const snapshot = await this.database.write(async (tx) => {
      const requirement = await this.lockForUpdate(tx, id);
      if (requirement.status !== 'waiting_confirmation') {
        throw conflict('requirement_not_waiting_confirmation', `Requirement ${id} is ${requirement.status}, not waiting_confirmation`);
      }
      const now = this.clock.nowIso();
      await tx.manager.update(RequirementEntity, { id }, { completedAt: now, status: 'done', updatedAt: now });
      await tx.manager.update(AgentSessionEntity, { requirementId: id }, { state: 'completed', updatedAt: now });
      const result = await this.mustSnapshot(tx.manager, id);
      await this.events.append(tx, {
        actor,
        payload: { requirement: result },
        requirementId: id,
        sessionId: result.session.id,
        type: 'requirement.completed',
      });
      return result;
    });
    this.logger.log({ actor: actor.kind, msg: 'requirement confirmed', requirementId: id });
    return snapshot;
  }

  /** Loads a Requirement inside a write unit (the write path is serialized, so no row lock is needed). */
  async lockForUpdate(tx: WriteTx, id: string): Promise<RequirementEntity> {
    const requirement = isId('requirement', id) ? await tx.manager.findOneBy(RequirementEntity, { id }) : null;
    if (!requirement) {
      throw requirementNotFound(id);
    }
    return requirement;
  }

  /** The Requirement with its session and pending count, as events and responses carry it. */
  async snapshot(manager: EntityManager, id: string): Promise<RequirementResponseDto | null> {
    const requirement = await manager.findOneBy(RequirementEntity, { id });
    if (!requirement) {
      return null;
    }
    const [snapshot] = await this.snapshots(manager, [requirement]);
    return snapshot ?? null;
  }

  async mustSnapshot(manager: EntityManager, id: string): Promise<RequirementResponseDto> {
    const snapshot = await this.snapshot(manager, id);
    if (!snapshot) {
      throw requirementNotFound(id);
    }
    return snapshot;
  }

  /** Snapshots for a page of Requirements in three queries, whatever the page size. */
  private async snapshots(manager: EntityManager, requirements: RequirementEntity[]): Promise<RequirementResponseDto[]> {
    if (requirements.length === 0) {
      return [];
    }
    const sessions = await manager
      .createQueryBuilder(AgentSessionEntity, 's')
      .where('s.requirement_id IN (:...ids)', { ids: requirements.map((r) => r.id) })
      .getMany();
    const byRequirement = new Map(sessions.map((s) => [s.requirementId, s]));
    const pending = await this.pendingCounts(manager, sessions);
    return requirements.map((r) => {
      const session = byRequirement.get(r.id);
      if (!session) {
        throw new Error(`Requirement ${r.id} has no session`); // invariant 1 broken: a bug, not input
      }
      return toRequirementResponse(r, session, pending.get(session.id) ?? 0);
    });
  }

  /** Deliverable messages after each session's consumed boundary, for many sessions at once. */
  private async pendingCounts(manager: EntityManager, sessions: AgentSessionEntity[]): Promise<Map<string, number>> {
    if (sessions.length === 0) {
      return new Map();
    }
    const rows: Array<{ id: string; n: number }> = await manager.query(
      `SELECT s.id AS id, COUNT(m.id) AS n
         FROM agent_session s
         JOIN requirement_message m
           ON m.requirement_id = s.requirement_id AND m.sequence > s.last_consumed_message_sequence AND m.deliver_to_rd = 1
        WHERE s.id IN (${sessions.map(() => '?').join(',')})
        GROUP BY s.id`,
      sessions.map((s) => s.id),
    );
    return new Map(rows.map((row) => [row.id, Number(row.n)]));
  }
}
