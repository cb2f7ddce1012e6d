import { Injectable, Logger } from '@nestjs/common';
import { Subject } from 'rxjs';

import { EventActor, TERMINAL_REQUIREMENT_STATUSES } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { OnDomainEvent } from '../core/domain-events';
import { conflict, notFound } from '../core/errors/domain-error';
import { isId, newId } from '../core/ids';
import { EventLog, audit } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import { AgentTimerEntity } from './agent-timer.entity';
import { TimersRepository } from './timers.repository';
import { CreateTimerDto, ListTimersQueryDto, TimerPageDto, TimerResponseDto, toTimerResponse } from './dto/timer.dto';

export const TIMER_TRIGGER_ID = 'timer';
/** Due timers handled per pass; the scheduler keeps passing while any are due. */
const FIRE_BATCH = 50;

const timerNotFound = (id: string) => notFound('timer_not_found', `Timer ${id} not found`);

/**
 * Agent timers: their lifecycle and their delivery as the `Timer fired.` system message
 * through the trigger framework. The receipt key is the timer ID plus the occurrence, so an
 * occurrence is delivered once even if the manager dies between delivery and re-arming.
 */
@Injectable()
export class TimersService {
  private readonly logger = new Logger(TimersService.name);
  /** Emits after any change that can move the earliest due time (the scheduler re-arms). */
  readonly changed$ = new Subject<void>();

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly delivery: TriggerDeliveryService,
    private readonly events: EventLog,
    private readonly repository: TimersRepository,
    private readonly requirements: RequirementsService,
  ) {}

  async create(requirementId: string, dto: CreateTimerDto, actor: EventActor): Promise<TimerResponseDto> {
    const timer = await this.database.write(async (tx) => {
      const { requirement, session } = await this.requirements.loadForWrite(tx, requirementId);
      if (TERMINAL_REQUIREMENT_STATUSES.includes(requirement.status)) {
        throw conflict(
          'requirement_closed',
          `Requirement ${requirementId} is ${requirement.status}; its timers have ended`,
        );
      }
      const now = this.clock.now();
      const entity: AgentTimerEntity = {
        createdAt: now.toISOString(),
        description: dto.description,
        id: newId('timer'),
        intervalSeconds: dto.intervalSeconds,
        lastFiredAt: null,
        nextFireAt: new Date(now.getTime() + dto.intervalSeconds * 1000).toISOString(),
        requirementId,
        schedule: dto.schedule,
        status: 'active',
        updatedAt: now.toISOString(),
      };
      this.repository.insert(tx, entity);
      const response = toTimerResponse(entity);
      await this.events.append(tx, {
        actor,
        payload: { timer: response },
        requirementId,
        sessionId: session.id,
        type: 'timer.created',
      });
      tx.afterCommit(() => this.changed$.next());
      return response;
    });
    this.logger.log({ ...audit(actor), msg: 'timer created', requirementId, timerId: timer.id });
    return timer;
  }

  async cancel(requirementId: string, timerId: string, actor: EventActor): Promise<TimerResponseDto> {
    const timer = await this.database.write(async (tx) => {
      const { session } = await this.requirements.loadForWrite(tx, requirementId);
      const entity = isId('timer', timerId) ? await this.repository.findIn(tx, { id: timerId, requirementId }) : null;
      if (!entity) {
        throw timerNotFound(timerId);
      }
      if (entity.status !== 'active') {
        throw conflict('timer_not_active', `Timer ${timerId} is ${entity.status}`);
      }
      const now = this.clock.nowIso();
      Object.assign(entity, { nextFireAt: null, status: 'cancelled', updatedAt: now });
      this.repository.update(tx, { nextFireAt: null, status: 'cancelled', updatedAt: now }, { id: timerId });
      const response = toTimerResponse(entity);
      await this.events.append(tx, {
        actor,
        payload: { timer: response },
        requirementId,
        sessionId: session.id,
        type: 'timer.cancelled',
      });
      tx.afterCommit(() => this.changed$.next());
      return response;
    });
    this.logger.log({ ...audit(actor), msg: 'timer cancelled', requirementId, timerId });
    return timer;
  }

  async list(query: ListTimersQueryDto): Promise<TimerPageDto> {
    const { nextCursor, rows } = await this.repository.page(query);
    return { items: rows.map(toTimerResponse), nextCursor };
  }

  /** A Requirement's timers (404 for an unknown Requirement). */
  async listFor(requirementId: string, query: ListTimersQueryDto): Promise<TimerPageDto> {
    await this.requirements.get(requirementId);
    return this.list({ ...query, requirementId });
  }

  /** When the earliest active timer is due, or null when none is active. */
  async nextDueAt(): Promise<Date | null> {
    const at = await this.repository.nextFireAt();
    return at === null ? null : new Date(at);
  }

  /** Delivers every occurrence due now; resolves with how many were handled and how many failed. */
  async fireDue(): Promise<{ handled: number; failed: number }> {
    let handled = 0;
    let failed = 0;
    for (;;) {
      const due = await this.repository.due(this.clock.nowIso(), FIRE_BATCH);
      for (const timer of due) {
        await this.fire(timer).catch((err: unknown) => {
          // A failing Requirement must not stop the others; the occurrence stays due and is retried.
          failed += 1;
          this.logger.error({ error: (err as Error).message, msg: 'timer delivery failed', timerId: timer.id });
        });
        handled += 1;
      }
      if (due.length < FIRE_BATCH || failed > 0) {
        return { failed, handled };
      }
    }
  }

  private async fire(timer: AgentTimerEntity): Promise<void> {
    const scheduledFor = timer.nextFireAt as string;
    const cancelHint =
      timer.schedule === 'recurring'
        ? `\nIt repeats every ${timer.intervalSeconds} s; to stop it run: code-factory-cli timer cancel --id ${timer.id}`
        : '';
    await this.delivery.deliver(
      {
        args: {
          description: timer.description,
          intervalSeconds: timer.intervalSeconds,
          schedule: timer.schedule,
          timerId: timer.id,
        },
        author: 'system',
        body: `Timer fired.\nTimer: ${timer.id} (${timer.schedule})\nDescription: ${timer.description}${cancelHint}`,
        code: 'timer.fired',
        metadata: { description: timer.description, schedule: timer.schedule, scheduledFor, timerId: timer.id },
        receiptKey: `${timer.id}@${scheduledFor}`,
        requirementId: timer.requirementId,
        source: 'timer',
        triggerId: TIMER_TRIGGER_ID,
      },
      {
        // Cancelled, ended or already advanced since it was read: nothing to deliver.
        guard: async (tx) => {
          const current = await this.repository.findIn(tx, { id: timer.id });
          return current?.status === 'active' && current.nextFireAt === scheduledFor;
        },
        alsoWrite: (tx, rows, message) => this.advance(tx, timer, scheduledFor, rows.session.id, message?.id ?? null),
      },
    );
    this.changed$.next();
  }

  /**
   * After an occurrence: a one-time timer completes; a recurring one moves to its next
   * occurrence after now, skipping any it missed while the manager was down.
   */
  private async advance(
    tx: UnitOfWork,
    timer: AgentTimerEntity,
    scheduledFor: string,
    sessionId: string,
    messageId: string | null,
  ): Promise<void> {
    const now = this.clock.now();
    const intervalMs = timer.intervalSeconds * 1000;
    const missed = Math.floor((now.getTime() - new Date(scheduledFor).getTime()) / intervalMs);
    const next =
      timer.schedule === 'recurring'
        ? new Date(new Date(scheduledFor).getTime() + (missed + 1) * intervalMs).toISOString()
        : null;
    const updated: AgentTimerEntity = {
      ...timer,
      lastFiredAt: now.toISOString(),
      nextFireAt: next,
      status: next ? 'active' : 'completed',
      updatedAt: now.toISOString(),
    };
    this.repository.update(
      tx,
      { lastFiredAt: updated.lastFiredAt, nextFireAt: next, status: updated.status, updatedAt: updated.updatedAt },
      { id: timer.id },
    );
    await this.events.append(tx, {
      actor: { id: TIMER_TRIGGER_ID, kind: 'trigger' },
      payload: { messageId, scheduledFor, skippedOccurrences: Math.max(0, missed), timer: toTimerResponse(updated) },
      requirementId: timer.requirementId,
      sessionId,
      type: 'timer.fired',
    });
  }

  /** Ends a closing Requirement's active timers (in its closing unit); their snapshots ride on the terminal event. */
  @OnDomainEvent('requirement.closing')
  async endFor(tx: UnitOfWork, requirementId: string, now: string): Promise<{ timers?: TimerResponseDto[] }> {
    const active = await this.repository.activeOfIn(tx, requirementId);
    if (active.length === 0) {
      return {};
    }
    this.repository.update(
      tx,
      { nextFireAt: null, status: 'cancelled', updatedAt: now },
      { requirementId, status: 'active' },
    );
    tx.afterCommit(() => this.changed$.next());
    return {
      timers: active.map((t) => toTimerResponse({ ...t, nextFireAt: null, status: 'cancelled', updatedAt: now })),
    };
  }
}
