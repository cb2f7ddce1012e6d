import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

import type { EventActor, ManagerEventPayloads, RequirementCreator } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { WriteTx } from '../core/database/write-tx';
import { conflict, notFound } from '../core/errors/domain-error';
import { keysetPage, newestFirst } from '../core/http/pagination';
import { isId, newId } from '../core/ids';
import { EventLog, audit } from '../events/event-log.service';
import { AgentSessionEntity } from './agent-session.entity';
import { CreateRequirementDto } from './dto/create-requirement.dto';
import { ListRequirementsQueryDto } from './dto/list-requirements-query.dto';
import { AgentSessionPageDto, RequirementPageDto, RequirementResponseDto, toRequirementResponse, toSessionResponse } from './dto/requirement-response.dto';
import { RequirementEntity } from './requirement.entity';

export interface NewRequirement extends CreateRequirementDto {
  createdBy: RequirementCreator;
  parentRequirementId?: string | null;
  sourceSessionId?: string | null;
}

/** A Requirement row and its session row, as the write path holds them. */
export interface RequirementRows {
  requirement: RequirementEntity;
  session: AgentSessionEntity;
}

/**
 * Work another module does, in the same transaction, when a Requirement becomes done or
 * cancelled (timers end). What it returns is added to the terminal event's payload.
 */
/** What closing steps add to the terminal event's payload (the timers that ended with it). */
export type ClosedExtras = Omit<ManagerEventPayloads['requirement.completed'], 'requirement'>;
export type ClosingStep = (tx: WriteTx, requirementId: string, now: string) => Promise<ClosedExtras>;

const CHILDREN_MAX = 500;

const cacheKey = (id: string) => `requirement:${id}`;

export const requirementNotFound = (id: string) => notFound('requirement_not_found', `Requirement ${id} not found`);

/**
 * Requirements and their RD sessions: creation (both rows in one transaction), the human
 * state transitions, and the snapshots every Requirement event carries.
 */
@Injectable()
export class RequirementsService {
  private readonly logger = new Logger(RequirementsService.name);
  private readonly closingSteps: ClosingStep[] = [];

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
        lastMessageSequence: 0,
        nativeSessionId: null,
        pausedAt: null,
        pendingMessageCount: 0,
        provider: input.provider,
        requirementId: requirement.id,
        state: 'idle',
        updatedAt: now,
      };
      tx.insert('requirement', { ...requirement });
      tx.insert('agent_session', { ...session });
      tx.cache.set(cacheKey(requirement.id), { requirement, session });
      const snapshot = toRequirementResponse(requirement, session);
      await this.events.append(tx, {
        actor,
        payload: { requirement: snapshot },
        requirementId: requirement.id,
        sessionId: session.id,
        type: 'requirement.created',
      });
      return snapshot;
    });
    this.logger.log({ ...audit(actor), msg: 'requirement created', requirementId: created.id });
    return created;
  }

  async get(id: string): Promise<RequirementResponseDto> {
    const snapshot = await this.find(id);
    if (!snapshot) {
      throw requirementNotFound(id);
    }
    return snapshot;
  }

  /** The Requirement, or null when it does not exist (or was purged). */
  async find(id: string): Promise<RequirementResponseDto | null> {
    return isId('requirement', id) ? this.snapshot(this.database.readManager, id) : null;
  }

  /** Direct children, oldest first (bounded: an agent proposes a handful, not thousands). */
  async children(parentId: string): Promise<RequirementResponseDto[]> {
    const rows = await this.database
      .read(RequirementEntity)
      .createQueryBuilder('r')
      .where('r.parent_requirement_id = :parentId', { parentId })
      .orderBy('r.created_at', 'ASC')
      .addOrderBy('r.id', 'ASC')
      .limit(CHILDREN_MAX)
      .getMany();
    return this.snapshots(this.database.readManager, rows);
  }

  async list(query: ListRequirementsQueryDto): Promise<RequirementPageDto> {
    const qb = this.database.read(RequirementEntity).createQueryBuilder('r');
    if (query.status) {
      qb.andWhere('r.status = :status', { status: query.status });
    }
    const { nextCursor, rows } = await keysetPage(qb, newestFirst('r'), 'DESC', query);
    return { items: await this.snapshots(this.database.readManager, rows), nextCursor };
  }

  async listSessions(query: { limit?: number; cursor?: string }): Promise<AgentSessionPageDto> {
    const qb = this.database.read(AgentSessionEntity).createQueryBuilder('s');
    const { nextCursor, rows } = await keysetPage(qb, newestFirst('s'), 'DESC', query);
    return { items: rows.map((s) => toSessionResponse(s)), nextCursor };
  }

  /** DELETE: only a Requirement that never started can be withdrawn; it becomes `cancelled`. */
  async cancel(id: string, actor: EventActor): Promise<void> {
    await this.database.write(async (tx) => {
      const { requirement, session } = await this.loadForWrite(tx, id);
      if (requirement.status !== 'todo') {
        throw conflict('requirement_started', `Requirement ${id} is ${requirement.status}; only a todo Requirement can be deleted`);
      }
      requirement.status = 'cancelled';
      requirement.updatedAt = this.clock.nowIso();
      tx.update('requirement', { status: requirement.status, updatedAt: requirement.updatedAt }, { id });
      const closed = await this.runClosingSteps(tx, id, requirement.updatedAt);
      await this.events.append(tx, {
        actor,
        payload: { ...closed, requirement: toRequirementResponse(requirement, session) },
        requirementId: id,
        sessionId: session.id,
        type: 'requirement.deleted',
      });
    });
    this.logger.log({ ...audit(actor), msg: 'requirement cancelled', requirementId: id });
  }

  /** A person accepts the work: waiting_confirmation → done, the session completes. */
  async confirm(id: string, actor: EventActor): Promise<RequirementResponseDto> {
    const snapshot = await this.database.write(async (tx) => {
      const { requirement, session } = await this.loadForWrite(tx, id);
      if (requirement.status !== 'waiting_confirmation') {
        throw conflict('requirement_not_waiting_confirmation', `Requirement ${id} is ${requirement.status}, not waiting_confirmation`);
      }
      const now = this.clock.nowIso();
      Object.assign(requirement, { completedAt: now, status: 'done', updatedAt: now });
      // A done Requirement is no longer paused: a reply or related message reopening it starts a run.
      Object.assign(session, { pausedAt: null, state: 'completed', updatedAt: now });
      tx.update('requirement', { completedAt: now, status: 'done', updatedAt: now }, { id });
      tx.update('agent_session', { pausedAt: null, state: 'completed', updatedAt: now }, { id: session.id });
      const result = toRequirementResponse(requirement, session);
      const closed = await this.runClosingSteps(tx, id, now);
      await this.events.append(tx, {
        actor,
        payload: { ...closed, requirement: result },
        requirementId: id,
        sessionId: session.id,
        type: 'requirement.completed',
      });
      return result;
    });
    this.logger.log({ ...audit(actor), msg: 'requirement confirmed', requirementId: id });
    return snapshot;
  }

  /** Registers work to do when a Requirement becomes done or cancelled (see ClosingStep). */
  onClosing(step: ClosingStep): void {
    this.closingSteps.push(step);
  }

  private async runClosingSteps(tx: WriteTx, id: string, now: string): Promise<ClosedExtras> {
    const payload: ClosedExtras = {};
    for (const step of this.closingSteps) {
      Object.assign(payload, await step(tx, id, now));
    }
    return payload;
  }

  /**
   * A Requirement and its session for a write unit, from the write cache or in one query. The
   * write path is serialized, so what a unit gets here stays true until it commits. Whoever
   * changes either row changes these objects too (and stages the UPDATE), which keeps the
   * cache exact; snapshots are built from them without reading again.
   */
  async loadForWrite(tx: WriteTx, id: string): Promise<RequirementRows> {
    const cached = tx.cache.get<RequirementRows>(cacheKey(id));
    if (cached) {
      return cached;
    }
    const manager = isId('requirement', id) ? await tx.reads() : null;
    const requirement = manager
      ? await manager
          .createQueryBuilder(RequirementEntity, 'r')
          .innerJoinAndMapOne('r.session', AgentSessionEntity, 's', 's.requirement_id = r.id')
          .where('r.id = :id', { id })
          .getOne()
      : null;
    if (!requirement?.session) {
      throw requirementNotFound(id);
    }
    const { session } = requirement;
    delete requirement.session;
    const rows = { requirement, session };
    tx.cache.set(cacheKey(id), rows);
    return rows;
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

  /** Snapshots for a page of Requirements in two queries, whatever the page size. */
  private async snapshots(manager: EntityManager, requirements: RequirementEntity[]): Promise<RequirementResponseDto[]> {
    if (requirements.length === 0) {
      return [];
    }
    const sessions = await manager
      .createQueryBuilder(AgentSessionEntity, 's')
      .where('s.requirement_id IN (:...ids)', { ids: requirements.map((r) => r.id) })
      .getMany();
    const byRequirement = new Map(sessions.map((s) => [s.requirementId, s]));
    return requirements.map((r) => {
      const session = byRequirement.get(r.id);
      if (!session) {
        throw new Error(`Requirement ${r.id} has no session`); // invariant 1 broken: a bug, not input
      }
      return toRequirementResponse(r, session);
    });
  }
}
