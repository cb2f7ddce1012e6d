import { Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor, InterruptMode } from '@libs/contracts';

import { runnerView } from '../core/board/runner-directory';
import { Database } from '../core/database/database.service';
import { conflict } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, audit } from '../events/event-log.service';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import type { InterruptResponseDto } from './dto/run-response.dto';
import { RunsRepository } from './runs.repository';

/**
 * Team mode's part of the run lifecycle: which runner of the board runs a Requirement (its first
 * run's runner). Its worktree, session and processes live there, so no other runner may open,
 * stop or cancel its runs; input sent elsewhere waits in the conversation for that runner, and a
 * stop or steer asked elsewhere is carried to it through the board. Alone (no board), every run is
 * this manager's.
 */
@Injectable()
export class RunPlacement {
  private readonly logger = new Logger(RunPlacement.name);

  constructor(
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly runs: RunsRepository,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  /** This runner's id on a board, else null. */
  get ownRunnerId(): string | null {
    return this.runtime.board?.runnerId ?? null;
  }

  /** Whether another runner of the board runs this Requirement. */
  runsElsewhere(runnerId: string | null): boolean {
    const own = this.runtime.board?.runnerId;
    return own !== undefined && runnerId !== null && runnerId !== own;
  }

  /** Refuses (409 `runs_on_other_runner`, naming that runner) what only the Requirement's runner may do. */
  refuseIfElsewhere(requirementId: string, runnerId: string | null): void {
    if (this.runsElsewhere(runnerId)) {
      const runner = runnerView(runnerId);
      throw conflict(
        'runs_on_other_runner',
        `Requirement ${requirementId} runs on ${runner?.person ?? 'another person'}'s runner (${runner?.host ?? 'unknown host'}${runner?.online === false ? ', offline' : ''}): its runs are started, stopped and cancelled there`,
      );
    }
  }

  /**
   * A stop or steer asked here for a run another runner runs. It is written to the board as
   * `run.interrupt_requested` (durable, in the board's one order), and the runner that runs it
   * carries it out when its feed publishes it (RunLifecycle.onBoardEvent); the run's end reaches
   * every runner as its events do.
   */
  async carryInterrupt(
    requirement: RequirementResponseDto,
    mode: InterruptMode,
    actor: EventActor,
  ): Promise<InterruptResponseDto> {
    const run = (await this.runs.withStatus('running')).find(
      (r) => r.requirementId === requirement.id && r.role === 'rd',
    );
    if (requirement.session.state !== 'running' || !run || !requirement.runner) {
      throw conflict('no_active_run', `Requirement ${requirement.id} has no run to interrupt`);
    }
    const runnerId = requirement.runner.id;
    await this.database.write((tx) =>
      this.events.append(tx, {
        actor,
        payload: { mode, runId: run.id, runnerId },
        requirementId: requirement.id,
        runId: run.id,
        sessionId: requirement.session.id,
        type: 'run.interrupt_requested',
      }),
    );
    this.logger.log({
      ...audit(actor),
      mode,
      msg: 'run interrupt carried to its runner',
      requirementId: requirement.id,
      runId: run.id,
      runnerId,
    });
    return { accepted: true, action: 'interrupt', requirementId: requirement.id, runId: run.id };
  }
}
