import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import type { DependencyCondition, DependencyState, EventActor } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { OnDomainEvent } from '../core/domain-events';
import { conflict, invalid } from '../core/errors/domain-error';
import { EventLog, audit } from '../events/event-log.service';
import type { PullRequestEntity } from '../pull-requests/pull-request.entity';
import { PullRequestsService } from '../pull-requests/pull-requests.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { ClosedExtras } from '../requirements/requirement.events';
import '../landing/landing.events';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import type { RequirementRows } from '../requirements/requirements.repository';
import type { NewRequirement } from '../requirements/new-requirement';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import type { DependencyInputDto, SetDependenciesDto } from '../requirements/dto/dependency.dto';
import type { RequirementDependencyEntity } from '../requirements/requirement-dependency.entity';
import { startPolicy } from '../requirements/start-policies';

/** The trigger whose deliveries tell a dependent what happened to what it waits for. */
export const DEPENDENCY_TRIGGER = 'requirement.dependency';
/** How far a cycle check walks before it gives up (far beyond any real plan). */
const CYCLE_WALK_MAX = 10_000;
const CATCH_UP_BATCH = 200;

/** `"Title" (until done, req_…)` for each: a person reads the title, a script still finds the id. */
const describeUnmet = (rows: { dependency: RequirementDependencyEntity; title: string | null }[]) =>
  rows
    .map(({ dependency: d, title }) =>
      title === null
        ? `${d.dependsOnRequirementId} (until ${d.until})`
        : `"${title}" (until ${d.until}, ${d.dependsOnRequirementId})`,
    )
    .join(', ');

/**
 * Requirements that wait for others (issue 18 §2). A dependency is met in the transaction that
 * sees its condition — the Requirement confirmed done, or the reconciler applying the merge of
 * its last unmerged PR — and the dependent is told after that commits, through the trigger
 * framework (receipt: dependent + dependency + event, so at most once across restarts; a start
 * delivers what a crash left untold). The delivery wakes the dependent when every dependency is
 * met and it has run before (or asked for `autoStart`); a cancelled dependency only tells it.
 */
@Injectable()
export class DependenciesService implements OnApplicationBootstrap {
  private readonly logger = new Logger(DependenciesService.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly delivery: TriggerDeliveryService,
    private readonly events: EventLog,
    private readonly pullRequests: PullRequestsService,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
  ) {}

  /** A new Requirement's dependencies are checked and staged in its creating unit. */
  @OnDomainEvent('requirement.created')
  async created(tx: UnitOfWork, rows: RequirementRows, input: NewRequirement): Promise<void> {
    await this.stage(tx, rows, input.dependsOn ?? [], input.autoStart === true);
  }

  /** An explicit start waits until every dependency is met (a 409 names the blockers by title). */
  @OnDomainEvent('requirement.starting', { order: startPolicy('dependencies') })
  async guardStart(tx: UnitOfWork, rows: RequirementRows): Promise<void> {
    const unmet = (rows.requirement.dependsOn ?? []).filter((d) => d.state === 'pending');
    if (unmet.length > 0) {
      const named = [];
      for (const dependency of unmet) {
        named.push({
          dependency,
          title:
            (await this.requirements.findForWrite(tx, dependency.dependsOnRequirementId))?.requirement.title ?? null,
        });
      }
      throw conflict('dependency_unmet', `"${rows.requirement.title}" is blocked by ${describeUnmet(named)}`);
    }
  }

  /** Tells the dependents a crash (or a stop) left untold; in the background, after the runs' own startup pass. */
  onApplicationBootstrap(): void {
    void this.catchUp().catch((err: unknown) =>
      this.logger.error({ error: (err as Error).message, msg: 'dependency catch-up failed' }),
    );
  }

  /** PUT /requirements/:id/dependencies: replaces what the Requirement waits for. */
  async set(id: string, dto: SetDependenciesDto, actor: EventActor): Promise<RequirementResponseDto> {
    const snapshot = await this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, id);
      if (rows.requirement.status === 'done' || rows.requirement.status === 'cancelled') {
        throw conflict('requirement_closed', `Requirement ${id} is ${rows.requirement.status}`);
      }
      await this.stage(tx, rows, dto.dependsOn, dto.autoStart === true);
      const now = this.clock.nowIso();
      this.requirementLifecycle.touch(tx, rows.requirement, now);
      const result = toRequirementResponse(rows.requirement, rows.session);
      await this.events.append(tx, {
        actor,
        payload: { requirement: result },
        requirementId: id,
        sessionId: rows.session.id,
        type: 'requirement.updated',
      });
      return result;
    });
    this.logger.log({ ...audit(actor), dependsOn: dto.dependsOn.length, msg: 'dependencies set', requirementId: id });
    return snapshot;
  }

  /** Checks and stages a Requirement's dependencies (replacing any), each in the state its target is in now. */
  private async stage(
    tx: UnitOfWork,
    rows: RequirementRows,
    inputs: DependencyInputDto[],
    autoStart: boolean,
  ): Promise<void> {
    const id = rows.requirement.id;
    const targets = inputs.map((d) => d.requirementId);
    if (new Set(targets).size !== targets.length) {
      throw invalid('dependency_duplicate', 'each Requirement may appear once in dependsOn');
    }
    const now = this.clock.nowIso();
    const staged: RequirementDependencyEntity[] = [];
    for (const input of inputs) {
      if (input.requirementId === id) {
        throw invalid('dependency_cycle', `Requirement ${id} cannot depend on itself`);
      }
      const target = await this.requirements.findForWrite(tx, input.requirementId);
      if (!target) {
        throw invalid(
          'dependency_not_found',
          `dependsOn names Requirement ${input.requirementId}, which does not exist`,
        );
      }
      const resolved = await this.stateNow(tx, target.requirement.id, target.requirement.status, input.until);
      staged.push({
        autoStart,
        createdAt: now,
        dependsOnRequirementId: input.requirementId,
        // Already met (or cancelled) when set: nothing happened since, so nothing to tell.
        notifiedAt: resolved ? now : null,
        reason: resolved?.reason ?? null,
        requirementId: id,
        resolvedAt: resolved ? now : null,
        state: resolved?.state ?? 'pending',
        until: input.until,
      });
    }
    await this.refuseCycle(tx, id, targets);
    await this.requirementLifecycle.replaceDependencies(tx, rows, staged);
  }

  /** A cycle exists when the Requirement is reachable from what it would depend on. */
  private async refuseCycle(tx: UnitOfWork, id: string, targets: string[]): Promise<void> {
    const visited = new Set<string>(targets);
    let frontier = targets;
    while (frontier.length > 0) {
      if (frontier.includes(id)) {
        throw invalid(
          'dependency_cycle',
          `Requirement ${id} would wait for itself: a Requirement in dependsOn already waits (perhaps indirectly) for it`,
        );
      }
      if (visited.size > CYCLE_WALK_MAX) {
        throw invalid('dependency_cycle', 'the dependency graph is too deep to check for cycles');
      }
      frontier = (await this.requirements.dependencyTargetsIn(tx, frontier)).filter((next) => !visited.has(next));
      frontier.forEach((next) => visited.add(next));
    }
  }

  /** Whether a dependency on `targetId` is already met or cancelled; null while pending. */
  private async stateNow(
    tx: UnitOfWork,
    targetId: string,
    status: string,
    until: DependencyCondition,
  ): Promise<{ state: DependencyState; reason: string } | null> {
    if (status === 'cancelled') {
      return { reason: 'cancelled', state: 'cancelled' };
    }
    if (until === 'done') {
      return status === 'done' ? { reason: 'confirmed done', state: 'met' } : null;
    }
    const merged = mergedReason(await this.pullRequests.ofRequirementIn(tx, targetId));
    if (merged) {
      return { reason: merged, state: 'met' };
    }
    const landing = (await this.requirements.findForWrite(tx, targetId))?.requirement.landing;
    if (landing?.landedAt && landing.landedCommit) {
      return { reason: landedReason(landing.landedCommit), state: 'met' };
    }
    return status === 'done' && (await this.pullRequests.ofRequirementIn(tx, targetId)).length === 0
      ? { reason: 'confirmed done (no pull requests)', state: 'met' }
      : null;
  }

  /** A Requirement became done or cancelled (in its closing unit). */
  @OnDomainEvent('requirement.closing')
  async closed(tx: UnitOfWork, id: string, now: string): Promise<ClosedExtras> {
    const { requirement } = await this.requirements.loadForWrite(tx, id);
    if (requirement.status === 'cancelled') {
      await this.resolve(tx, id, ['done', 'merged'], 'cancelled', 'cancelled', now);
      return {};
    }
    if (requirement.status !== 'done') {
      return {};
    }
    await this.resolve(tx, id, ['done'], 'met', 'confirmed done', now);
    if ((await this.pullRequests.ofRequirementIn(tx, id)).length === 0) {
      await this.resolve(tx, id, ['merged'], 'met', 'confirmed done (no pull requests)', now);
    }
    return {};
  }

  /** The reconciler applied a PR's new status (in its unit): the last merge meets `merged` dependencies. */
  @OnDomainEvent('pullRequest.statusChanged')
  async statusChanged(tx: UnitOfWork, pullRequest: PullRequestEntity): Promise<void> {
    if (pullRequest.status !== 'merged') {
      return;
    }
    const reason = mergedReason(await this.pullRequests.ofRequirementIn(tx, pullRequest.requirementId));
    if (reason) {
      await this.resolve(tx, pullRequest.requirementId, ['merged'], 'met', reason, this.clock.nowIso());
    }
  }

  /** Its branch landed locally (in the land's unit): met as a merged PR meets it. */
  @OnDomainEvent('requirement.landed')
  async landed(tx: UnitOfWork, rows: RequirementRows, landed: { commit: string }): Promise<void> {
    await this.resolve(tx, rows.requirement.id, ['merged'], 'met', landedReason(landed.commit), this.clock.nowIso());
  }

  /** Resolves the pending dependencies on `dependencyId` with one of `conditions`; tells each dependent after the commit. */
  private async resolve(
    tx: UnitOfWork,
    dependencyId: string,
    conditions: DependencyCondition[],
    state: DependencyState,
    reason: string,
    now: string,
  ): Promise<void> {
    const told: string[] = [];
    for (const dependentId of await this.requirements.waitingOnIn(tx, dependencyId)) {
      const row = (await this.requirements.dependenciesOfIn(tx, dependentId)).find(
        (d) => d.dependsOnRequirementId === dependencyId,
      );
      if (row?.state === 'pending' && conditions.includes(row.until)) {
        await this.requirementLifecycle.changeDependency(tx, dependentId, dependencyId, {
          reason,
          resolvedAt: now,
          state,
        });
        told.push(dependentId);
      }
    }
    if (told.length > 0) {
      tx.afterCommit(() => told.forEach((dependentId) => void this.notify(dependentId, dependencyId)));
    }
  }

  /** Delivers what remains untold (at a start: a crash or a stop came between the two commits). */
  private async catchUp(): Promise<void> {
    for (const row of await this.requirements.untoldDependencies(CATCH_UP_BATCH)) {
      await this.notify(row.requirementId, row.dependsOnRequirementId);
    }
  }

  /** Tells a dependent that `dependencyId` was met or cancelled, once (the receipt), waking it when that was the last. */
  private async notify(dependentId: string, dependencyId: string): Promise<void> {
    try {
      const [row] = (await this.requirements.dependenciesOf(dependentId)).filter(
        (d) => d.dependsOnRequirementId === dependencyId,
      );
      if (!row || row.state === 'pending') {
        return;
      }
      const dependency = await this.requirements.find(dependencyId);
      const name = dependency ? `"${dependency.title}" (${dependencyId})` : dependencyId;
      const met = row.state === 'met';
      const title = dependency?.title ?? null;
      // "confirmed done…" or the merged pull requests: the dashboard says the first in the reader's words.
      const merged =
        !row.reason || row.reason.startsWith('confirmed done') ? null : row.reason.replace(/ merged as /g, ' @ ');
      await this.delivery.deliver(
        {
          args: met ? { merged, requirementId: dependencyId, title } : { requirementId: dependencyId, title },
          author: 'system',
          body: met
            ? `Dependency met: ${name} ${row.reason}.`
            : `Dependency cancelled: ${name} was withdrawn and will not be done. This Requirement was not started for it; decide with the person how to go on.`,
          code: met ? 'dependency.met' : 'dependency.cancelled',
          metadata: { dependencyRequirementId: dependencyId, event: row.state, reason: row.reason, until: row.until },
          receiptKey: `${dependentId}:${dependencyId}:${row.state}`,
          requirementId: dependentId,
          source: 'dependency',
          triggerId: DEPENDENCY_TRIGGER,
        },
        {
          alsoWrite: async (tx) =>
            void (await this.requirementLifecycle.changeDependency(tx, dependentId, dependencyId, {
              notifiedAt: this.clock.nowIso(),
            })),
          wakes: async (_tx, rows) => {
            const all = rows.requirement.dependsOn ?? [];
            const everyMet = met && all.every((d) => d.state === 'met');
            // Started before: it goes on; never started: only when it asked to start by itself.
            return everyMet && (rows.requirement.status !== 'todo' || all.some((d) => d.autoStart));
          },
        },
      );
    } catch (err) {
      // Left untold (notified_at null): the next start delivers it.
      this.logger.warn({
        dependencyId,
        error: (err as Error).message,
        msg: 'dependency not told yet',
        requirementId: dependentId,
      });
    }
  }
}

/** "landed as <sha>": what a local land meets a `merged` dependency with. */
function landedReason(commit: string): string {
  return `landed as ${commit.slice(0, 12)}`;
}

/** "Org/Repo#4 merged as <sha>" for each PR when every one is merged, else null. */
function mergedReason(pullRequests: PullRequestEntity[]): string | null {
  if (pullRequests.length === 0 || pullRequests.some((p) => p.status !== 'merged')) {
    return null;
  }
  return pullRequests.map((p) => `${p.repository}#${p.number} merged as ${p.headSha}`).join(', ');
}
