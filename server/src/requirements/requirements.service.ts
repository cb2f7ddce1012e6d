import { Injectable, Logger } from '@nestjs/common';
import type { EventActor, RequirementSource, RequirementStatus } from '@libs/contracts';

import { budgetColumns } from './budget-rules';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { DomainEvents } from '../core/domain-events';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, invalid, notFound } from '../core/errors/domain-error';
import { newId } from '../core/ids';
import { DependenciesRepository } from './dependencies.repository';
import { EventLog, audit } from '../events/event-log.service';
import { AgentSessionEntity } from './agent-session.entity';
import { autoReviewColumns } from './dto/auto-review.dto';
import { ListRequirementsQueryDto } from './dto/list-requirements-query.dto';
import { ForkRequirementDto, UpdateRequirementDto } from './dto/update-requirement.dto';
import {
  AgentSessionPageDto,
  RequirementPageDto,
  RequirementResponseDto,
  toRequirementResponse,
  toSessionResponse,
} from './dto/requirement-response.dto';
import type { RequirementDependencyEntity } from './requirement-dependency.entity';
import { RequirementEntity } from './requirement.entity';
import type { NewRequirement } from './new-requirement';
import type { ClosedExtras } from './requirement.events';
import { RequirementLifecycle } from './requirement-lifecycle';
import { RequirementRows, RequirementsRepository } from './requirements.repository';

const CHILDREN_MAX = 500;
/**
 * How far up (or down) a tree of proposals is followed. Parents are fixed at creation, so there
 * is no cycle; the bound only keeps a pathological tree from turning one step into thousands.
 */
export const TREE_DEPTH_MAX = 100;

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
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly dependencyRows: DependenciesRepository,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventLog,
    private readonly lifecycle: RequirementLifecycle,
    private readonly repository: RequirementsRepository,
  ) {}

  async create(input: NewRequirement, actor: EventActor): Promise<RequirementResponseDto> {
    const staging = await this.domainEvents.emit('requirement.creating', input);
    const created = await this.database.write(async (tx) => {
      if (input.source?.key) {
        await this.refuseImportedTwice(tx, input.source.key);
      }
      const now = this.clock.nowIso();
      const requirement: RequirementEntity = {
        ...(autoReviewColumns(input.autoReview, input.provider) ?? {
          autoReviewMaxRounds: null,
          autoReviewProvider: null,
        }),
        ...budgetColumns(input.budget, {
          maxCostUsd: this.configuration.get('defaultBudgetMaxCostUsd'),
          maxTokens: this.configuration.get('defaultBudgetMaxTokens'),
        }),
        budgetReachedAt: null,
        completedAt: null,
        createdAt: now,
        createdBy: input.createdBy,
        description: input.description ?? '',
        forkedFromRequirementId: input.forkedFromRequirementId ?? null,
        runnerId: null,
        id: newId('requirement'),
        model: input.model ?? null,
        parentRequirementId: input.parentRequirementId ?? null,
        provider: input.provider,
        reasoningEffort: input.reasoningEffort ?? null,
        source: input.source ? JSON.stringify(input.source.value) : null,
        sourceKey: input.source?.key ?? null,
        sourceSessionId: input.sourceSessionId ?? null,
        status: 'todo',
        title: input.title,
        updatedAt: now,
        treeUsageCostUsd: null,
        treeUsageInputTokens: 0,
        treeUsageOutputTokens: 0,
        usageCostUsd: null,
        usageInputTokens: 0,
        usageOutputTokens: 0,
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
      this.lifecycle.create(tx, { requirement, session });
      for (const stage of staging) {
        stage(tx, requirement);
      }
      requirement.dependsOn = [];
      await this.domainEvents.emit('requirement.created', tx, { requirement, session }, input);
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

  /** An issue is imported once (issue 49): the Requirement it became is named. */
  private async refuseImportedTwice(tx: UnitOfWork, key: string): Promise<void> {
    const existing = await this.repository.findBySourceKey(tx, key);
    if (existing !== null) {
      throw conflict('already_imported', `${key.replace(/^[a-z]+:/, '')} is already Requirement ${existing}`, [
        existing,
      ]);
    }
  }

  /** The Requirements imported from these issues, by source key (those never imported are absent). */
  importedAsMany(keys: string[]): Promise<Map<string, string>> {
    return this.repository.findBySourceKeys(keys);
  }

  /** Requirements imported from an issue, not done or cancelled: what the tracker's changes still reach. */
  async importedOpen(): Promise<
    Array<{ id: string; createdAt: string; sourceKey: string; source: RequirementSource }>
  > {
    return (await this.repository.findImportedOpen()).flatMap((row) =>
      row.source === null || row.sourceKey === null
        ? []
        : [
            {
              createdAt: row.createdAt,
              id: row.id,
              source: JSON.parse(row.source) as RequirementSource,
              sourceKey: row.sourceKey,
            },
          ],
    );
  }

  /**
   * What the tracker says of an imported Requirement's issue now (its state, title, labels): kept
   * on `source` so the card shows an issue closed elsewhere. Writes only when something changed.
   */
  async applyIssueState(
    id: string,
    issue: Pick<RequirementSource, 'state' | 'title' | 'labels'>,
    actor: EventActor,
  ): Promise<boolean> {
    return this.database.write(async (tx) => {
      const { requirement, session } = await this.loadForWrite(tx, id);
      if (requirement.source === null) {
        return false;
      }
      const before = JSON.parse(requirement.source) as RequirementSource;
      const after: RequirementSource = { ...before, labels: issue.labels, state: issue.state, title: issue.title };
      if (JSON.stringify(after) === JSON.stringify(before)) {
        return false;
      }
      this.lifecycle.recordSource(tx, requirement, JSON.stringify(after), this.clock.nowIso());
      await this.events.append(tx, {
        actor,
        payload: { requirement: toRequirementResponse(requirement, session) },
        requirementId: id,
        sessionId: session.id,
        type: 'requirement.updated',
      });
      return true;
    });
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
    return this.snapshot(id);
  }

  /** Direct children, oldest first (bounded: an agent proposes a handful, not thousands). */
  async children(parentId: string): Promise<RequirementResponseDto[]> {
    return this.snapshots(await this.repository.children(parentId, CHILDREN_MAX));
  }

  async list(query: ListRequirementsQueryDto): Promise<RequirementPageDto> {
    const { nextCursor, rows } = await this.repository.page(query);
    return { items: await this.snapshots(rows), nextCursor };
  }

  async listSessions(query: { limit?: number; cursor?: string }): Promise<AgentSessionPageDto> {
    const { nextCursor, rows } = await this.repository.sessionsPage(query);
    return { items: rows.map((s) => toSessionResponse(s)), nextCursor };
  }

  /** DELETE: only a Requirement that never started can be withdrawn; it becomes `cancelled`. */
  async cancel(id: string, actor: EventActor): Promise<void> {
    await this.database.write(async (tx) => {
      const { requirement, session } = await this.loadForWrite(tx, id);
      if (requirement.status !== 'todo') {
        throw conflict(
          'requirement_started',
          `Requirement ${id} is ${requirement.status}; only a todo Requirement can be deleted`,
        );
      }
      this.lifecycle.withdraw(tx, requirement, this.clock.nowIso());
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
    const snapshot = await this.database.write((tx) => this.confirmIn(tx, id, actor));
    this.logger.log({ ...audit(actor), msg: 'requirement confirmed', requirementId: id });
    return snapshot;
  }

  /** `confirm` inside the caller's unit (a local land confirms the work it landed, in the land's unit). */
  async confirmIn(tx: UnitOfWork, id: string, actor: EventActor): Promise<RequirementResponseDto> {
    const { requirement, session } = await this.loadForWrite(tx, id);
    if (requirement.status !== 'waiting_confirmation') {
      throw conflict(
        'requirement_not_waiting_confirmation',
        `Requirement ${id} is ${requirement.status}, not waiting_confirmation`,
      );
    }
    const now = this.clock.nowIso();
    this.lifecycle.confirm(tx, { requirement, session }, now);
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
  }

  /**
   * PATCH: a person edits a Requirement. Title, description and provider only while it is todo
   * (its agent has not read them, its session has no native id yet); model and effort apply from
   * the next run on, until it is cancelled. Nothing changes unless every field may.
   */
  async update(id: string, dto: UpdateRequirementDto, actor: EventActor): Promise<RequirementResponseDto> {
    const fields = Object.fromEntries(Object.entries(dto).filter(([, v]) => v !== undefined)) as UpdateRequirementDto;
    if (Object.keys(fields).length === 0) {
      throw invalid(
        'nothing_to_update',
        'name at least one of title, description, provider, model, reasoningEffort, autoReview, budget',
      );
    }
    const snapshot = await this.database.write(async (tx) => {
      const { requirement, session } = await this.loadForWrite(tx, id);
      if (requirement.status === 'cancelled') {
        throw conflict('requirement_closed', `Requirement ${id} is cancelled; fork it to work on it again`);
      }
      const textual = (['title', 'description', 'provider'] as const).filter(
        (k) => fields[k] !== undefined && fields[k] !== requirement[k],
      );
      if (requirement.status !== 'todo' && textual.length > 0) {
        throw conflict(
          'requirement_started',
          `Requirement ${id} is ${requirement.status}; ${textual.join(', ')} can change only while todo (fork it instead)`,
        );
      }
      const now = this.clock.nowIso();
      const { autoReview, budget, ...plain } = fields;
      // The loop's default reviewer is the other provider than the one that runs (after this edit).
      const loop = autoReviewColumns(autoReview, plain.provider ?? requirement.provider);
      // What a new budget means for a paused or running session is the budgets feature's (its updated step).
      const budgetChange = budget === undefined ? {} : budgetColumns(budget, { maxCostUsd: null, maxTokens: null });
      this.lifecycle.edit(tx, { requirement, session }, { ...plain, ...loop, ...budgetChange }, now);
      const result = toRequirementResponse(requirement, session);
      await this.events.append(tx, {
        actor,
        payload: { requirement: result },
        requirementId: id,
        sessionId: session.id,
        type: 'requirement.updated',
      });
      return result;
    });
    this.logger.log({ ...audit(actor), fields: Object.keys(fields), msg: 'requirement updated', requirementId: id });
    let latest = snapshot;
    for (const newer of await this.domainEvents.emit('requirement.edited', id, fields, actor)) {
      latest = newer ?? latest;
    }
    return latest;
  }

  /** A new todo Requirement with the original's fields (overridden by the body's), linked to it. */
  async fork(id: string, dto: ForkRequirementDto, actor: EventActor): Promise<RequirementResponseDto> {
    const original = await this.get(id);
    return this.create(
      {
        autoReview: dto.autoReview === undefined ? original.autoReview : dto.autoReview,
        budget: dto.budget === undefined ? original.budget : dto.budget,
        createdBy: 'human',
        description: dto.description ?? original.description,
        forkedFromRequirementId: original.id,
        model: dto.model === undefined ? original.model : dto.model,
        // An issue's words stay marked as the issue's in a copy that keeps them (the copy is not an import of it).
        source:
          original.source !== null && (dto.description === undefined || dto.title === undefined)
            ? { key: null, value: original.source }
            : null,
        provider: dto.provider ?? original.provider,
        reasoningEffort: dto.reasoningEffort === undefined ? original.reasoningEffort : dto.reasoningEffort,
        title: dto.title ?? original.title,
      },
      actor,
    );
  }

  /**
   * Cancel a started Requirement (inside a write unit of the Requirement's actor, see
   * RunLifecycle.cancel): `cancelled`, its session `completed` unless a run is still ending (the
   * run's end records that), its timers ended, one `requirement.cancelled` event.
   */
  async cancelStarted(
    tx: UnitOfWork,
    id: string,
    runActive: boolean,
    actor: EventActor,
  ): Promise<RequirementResponseDto> {
    const { requirement, session } = await this.loadForWrite(tx, id);
    if (requirement.status === 'done' || requirement.status === 'cancelled') {
      throw conflict('requirement_closed', `Requirement ${id} is ${requirement.status}`);
    }
    const now = this.clock.nowIso();
    this.lifecycle.cancel(tx, { requirement, session }, runActive, now);
    const result = toRequirementResponse(requirement, session);
    const closed = await this.runClosingSteps(tx, id, now);
    await this.events.append(tx, {
      actor,
      payload: { ...closed, requirement: result },
      requirementId: id,
      sessionId: session.id,
      type: 'requirement.cancelled',
    });
    return result;
  }

  /** Tells the closing handlers (inside the closing unit); returns their payload additions. */
  private async runClosingSteps(tx: UnitOfWork, id: string, now: string): Promise<ClosedExtras> {
    return Object.assign({}, ...(await this.domainEvents.emit('requirement.closing', tx, id, now))) as ClosedExtras;
  }

  /**
   * A Requirement and its session for a write unit (see RequirementsRepository.loadForWrite):
   * whoever changes either row does it through an intent of RequirementLifecycle, which changes
   * these objects in place and keeps the write cache exact; snapshots are built from them without
   * reading again.
   */
  async loadForWrite(tx: UnitOfWork, id: string): Promise<RequirementRows> {
    const rows = await this.repository.loadForWrite(tx, id);
    if (!rows) {
      throw requirementNotFound(id);
    }
    // Beside the session: the snapshot carries them (cached between units, kept exact by their repository).
    rows.requirement.dependsOn = await this.dependencyRows.ofDependentIn(tx, id);
    return rows;
  }

  /**
   * The Requirement's ancestors (its parent, its parent's parent…) as the write unit holds them,
   * nearest first: a run's usage counts against each of their budgets (issue 25 §4). Costs
   * nothing for a Requirement a person created (no parent).
   */
  async ancestorsForWrite(tx: UnitOfWork, requirement: RequirementEntity): Promise<RequirementRows[]> {
    const ancestors: RequirementRows[] = [];
    const seen = new Set([requirement.id]);
    let parentId = requirement.parentRequirementId;
    while (parentId !== null && !seen.has(parentId) && ancestors.length < TREE_DEPTH_MAX) {
      const rows = await this.repository.loadForWrite(tx, parentId);
      if (!rows) {
        break; // purged: its children were detached (ON DELETE SET NULL), so this is only a race with that unit
      }
      rows.requirement.dependsOn = await this.dependencyRows.ofDependentIn(tx, parentId);
      seen.add(parentId);
      ancestors.push(rows);
      parentId = rows.requirement.parentRequirementId;
    }
    return ancestors;
  }

  /** The Requirement and its ancestors, nearest first, as committed (an empty list when it does not exist). */
  async lineage(id: string): Promise<RequirementEntity[]> {
    const chain: RequirementEntity[] = [];
    let next: string | null = id;
    while (next !== null && chain.length <= TREE_DEPTH_MAX && !chain.some((r) => r.id === next)) {
      const row = await this.repository.findById(next);
      if (!row) {
        break;
      }
      chain.push(row);
      next = row.parentRequirementId;
    }
    return chain;
  }

  /**
   * What an agent of this Requirement may name (issue 44 §6): the Requirement, those above it,
   * and those proposed below it at any depth — its own tree. Bounded: a few thousand at most.
   */
  async treeIds(id: string): Promise<Set<string>> {
    const ids = new Set((await this.lineage(id)).map((r) => r.id));
    let frontier = [id];
    for (let depth = 0; frontier.length > 0 && depth < TREE_DEPTH_MAX && ids.size < CHILDREN_MAX * 4; depth += 1) {
      const next: string[] = [];
      for (const parent of frontier) {
        for (const child of await this.repository.children(parent, CHILDREN_MAX)) {
          if (!ids.has(child.id)) {
            ids.add(child.id);
            next.push(child.id);
          }
        }
      }
      frontier = next;
    }
    return ids;
  }

  /** The Requirements below this one that a budget paused (see RequirementsRepository.budgetPausedBelow). */
  budgetPausedBelow(id: string): Promise<string[]> {
    return this.repository.budgetPausedBelow(id, TREE_DEPTH_MAX);
  }

  /**
   * A Requirement and its session for a write unit, or null when it does not exist, as the
   * repository holds them (its dependencies not read: for a look at another Requirement, e.g. a
   * dependency's target, not for a change of its own).
   */
  /** What a Requirement waits for, as the unit sees it (oldest first). */
  dependenciesOfIn(tx: UnitOfWork, dependentId: string): Promise<RequirementDependencyEntity[]> {
    return this.dependencyRows.ofDependentIn(tx, dependentId);
  }

  /** What a Requirement waits for, committed. */
  dependenciesOf(dependentId: string): Promise<RequirementDependencyEntity[]> {
    return this.dependencyRows.ofDependents([dependentId]);
  }

  /** Who still waits (pending) for `dependencyId`, as the unit sees it. */
  waitingOnIn(tx: UnitOfWork, dependencyId: string): Promise<string[]> {
    return this.dependencyRows.dependentsOfIn(tx, dependencyId, 'pending');
  }

  /** What the Requirements `ids` wait for, one step along the edges (the cycle check walks it). */
  dependencyTargetsIn(tx: UnitOfWork, ids: string[]): Promise<string[]> {
    return this.dependencyRows.targetsOfIn(tx, ids);
  }

  /** Resolved dependencies whose dependent was not told yet (a crash between the two), oldest first. */
  untoldDependencies(limit: number): Promise<RequirementDependencyEntity[]> {
    return this.dependencyRows.unnotified(limit);
  }

  findForWrite(tx: UnitOfWork, id: string): Promise<RequirementRows | null> {
    return this.repository.loadForWrite(tx, id);
  }

  /** The Requirements whose session runs now. */
  runningIds(): Promise<string[]> {
    return this.repository.runningIds();
  }

  exists(id: string): Promise<boolean> {
    return this.repository.exists(id);
  }

  /** Only the status, or null when it does not exist (an upload checks it before it streams a body). */
  statusOf(id: string): Promise<RequirementStatus | null> {
    return this.repository.statusOf(id);
  }

  /** The Requirement row alone, committed (a run's prompt reads its title and description). */
  findRow(id: string): Promise<RequirementEntity | null> {
    return this.repository.findById(id);
  }

  /** Team mode: the Requirements a runner of the board runs (their first run was its). */
  async runBy(runnerId: string): Promise<Set<string>> {
    return new Set(await this.repository.idsRunBy(runnerId));
  }

  /** The titles of these Requirements, by id (the ones that do not exist are left out). */
  async titlesOf(ids: string[]): Promise<Map<string, string>> {
    return new Map((await this.repository.findByIds(ids)).map((row) => [row.id, row.title]));
  }

  /** Terminal Requirements past their retention (see RequirementsRepository.dueForPurge), for RetentionService. */
  dueForPurge(tx: UnitOfWork, cancelledBefore: string, doneBefore: string, limit: number): Promise<string[]> {
    return this.repository.dueForPurge(tx, cancelledBefore, doneBefore, limit);
  }

  /** The Requirement with its session and pending count, as events and responses carry it. */
  async snapshot(id: string): Promise<RequirementResponseDto | null> {
    const requirement = await this.repository.findById(id);
    if (!requirement) {
      return null;
    }
    const [snapshot] = await this.snapshots([requirement]);
    return snapshot ?? null;
  }

  /** Snapshots for a page of Requirements in six queries, whatever the page size. */
  private async snapshots(requirements: RequirementEntity[]): Promise<RequirementResponseDto[]> {
    if (requirements.length === 0) {
      return [];
    }
    const ids = requirements.map((r) => r.id);
    const [sessions, worktrees, landings, attention] = await Promise.all([
      this.repository.sessionsOf(ids),
      this.repository.worktreesOf(ids),
      this.repository.landingsOf(ids),
      this.repository.attentionOf(ids),
    ]);
    const dependencies = await this.dependencyRows.ofDependents(ids);
    const byRequirement = new Map(sessions.map((s) => [s.requirementId, s]));
    const worktreeOf = new Map(worktrees.map((w) => [w.requirementId, w]));
    const landingOf = new Map(landings.map((l) => [l.requirementId, l]));
    return requirements.map((r) => {
      const session = byRequirement.get(r.id);
      if (!session) {
        throw new Error(`Requirement ${r.id} has no session`); // invariant 1 broken: a bug, not input
      }
      r.worktree = worktreeOf.get(r.id) ?? null;
      r.landing = landingOf.get(r.id) ?? null;
      r.attention = attention.filter((a) => a.requirementId === r.id);
      return toRequirementResponse({ ...r, dependsOn: dependencies.filter((d) => d.requirementId === r.id) }, session);
    });
  }
}
