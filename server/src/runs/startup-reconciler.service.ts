import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import { killRunTree } from '../agents/process-tree';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { processInfo } from '../core/process-table';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService } from '../requirements/requirements.service';
import type { AgentRunEntity } from './agent-run.entity';
import { managerStoppedMessage } from './manager-stop-message';
import { RunsRepository } from './runs.repository';

const LOST = 'Agent Manager stopped while this run was active';

/**
 * Invariant 11: at start no old PID is trusted. Runs left `running` by a manager that died
 * are failed, their sessions `failed`, their Requirements `waiting_confirmation`, with one
 * `manager.reconciled` event; their input stays pending for the retry. An agent that outlived
 * the manager is ended first: it must not keep editing the workspace unobserved.
 */
@Injectable()
export class StartupReconciler implements OnApplicationBootstrap {
  private readonly logger = new Logger(StartupReconciler.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly messages: MessagesService,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  /**
   * On a board, only this runner's: another runner's runs are alive on its machine, and one that
   * went away reconciles its own when it comes back (docs/team-mode.md, "Who runs what").
   */
  private async ownRuns(runs: AgentRunEntity[]): Promise<AgentRunEntity[]> {
    const board = this.runtime.board;
    if (!board || runs.length === 0) {
      return runs;
    }
    const own = await this.requirements.runBy(board.runnerId);
    return runs.filter((run) => own.has(run.requirementId));
  }

  async onApplicationBootstrap(): Promise<void> {
    const stale = await this.ownRuns(await this.runs.withStatus('running'));
    if (stale.length === 0) {
      return;
    }
    for (const run of stale) {
      // The recorded start time proves a pid still belongs to the run; the marker finds the rest.
      const sameProcess = run.processId !== null && processInfo(run.processId)?.startTime === run.processStartTime;
      if (run.processMarker) {
        await killRunTree(run.processMarker, sameProcess ? run.processId : null).catch((err: unknown) =>
          this.logger.error(`could not end the orphaned processes of run ${run.id}: ${(err as Error).message}`),
        );
      }
    }
    await this.database.write(async (tx) => {
      const now = this.clock.nowIso();
      const requirementIds: string[] = [];
      for (const run of stale) {
        this.runs.update(tx, { error: LOST, finishedAt: now, status: 'failed', updatedAt: now }, { id: run.id });
        if (run.role !== 'rd') {
          continue;
        }
        const rows = await this.requirements.loadForWrite(tx, run.requirementId);
        this.requirementLifecycle.recordRunLost(tx, rows, LOST, now);
        await this.messages.append(tx, rows, managerStoppedMessage(run.id), SYSTEM_ACTOR);
        requirementIds.push(rows.requirement.id);
        await this.events.append(tx, {
          actor: SYSTEM_ACTOR,
          payload: { requirement: toRequirementResponse(rows.requirement, rows.session) },
          requirementId: rows.requirement.id,
          sessionId: rows.session.id,
          type: 'requirement.updated',
        });
      }
      await this.events.append(tx, {
        actor: SYSTEM_ACTOR,
        payload: { failedRunIds: stale.map((r) => r.id), requirementIds },
        type: 'manager.reconciled',
      });
    });
    this.logger.warn({ msg: 'reconciled runs left running by a stopped manager', runs: stale.map((r) => r.id) });
  }
}
