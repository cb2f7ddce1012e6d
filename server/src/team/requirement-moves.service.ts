import { Inject, Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import type { BoardRunner } from '../core/board/runner-directory';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { conflict } from '../core/errors/domain-error';
import { RUNTIME, type Runtime } from '../core/runtime';
import { EventLog, audit } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService } from '../requirements/requirements.service';
import { toRunResponse } from '../runs/dto/run-response.dto';
import { RequirementActors } from '../runs/requirement-actors.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import type { MovedBranch } from '../worktrees/worktrees.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import { BranchSharing } from './branch-sharing.service';
import type { MoveResponseDto } from './dto/move-response.dto';

/** How a runner is named in the conversation: its person and its machine. */
const runnerLabel = (runner: Pick<BoardRunner, 'personName' | 'host'> | undefined): string =>
  runner ? `${runner.personName}'s runner (${runner.host})` : 'a runner no longer on the board';

/**
 * Team mode: a person moves a Requirement to their own runner (issue 29 §5, docs/team-mode.md
 * "Move"). Allowed when its runner is offline (its run, if any, is lost with it) or online with
 * the session not running. In the Requirement's actor:
 *
 * 1. its branch as last pushed (each run's end pushes it, see BranchSharing) is fetched from the
 *    shared remote into this clone (git first, outside the unit: nothing is written if it throws);
 * 2. one unit: its runner becomes this one, the CLI's own session is dropped (it lives in the old
 *    machine's home: the next run is a new session told the conversation so far), the worktree row
 *    forgets the old machine's folder, the run the old runner left `running` fails, a system
 *    message says all of it, `requirement.moved` tells the board (the old runner, if it is alive
 *    after all, ends that run), and a run opens at once when input waits;
 * 3. that run is launched.
 */
@Injectable()
export class RequirementMoves {
  private readonly logger = new Logger(RequirementMoves.name);

  constructor(
    private readonly actors: RequirementActors,
    private readonly branches: BranchSharing,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly lifecycle: RunLifecycle,
    private readonly messages: MessagesService,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
    private readonly worktrees: WorktreesService,
  ) {}

  async move(requirementId: string, actor: EventActor): Promise<MoveResponseDto> {
    const board = this.runtime.board;
    if (!board) {
      await this.requirements.get(requirementId); // 404 first
      throw conflict(
        'not_on_board',
        'moving a Requirement between runners needs team mode: start Agent Manager with --db postgres://… --board',
      );
    }
    return this.actors.act(requirementId, async () => {
      const before = await this.requirements.get(requirementId);
      const fromId = before.runner?.id ?? null;
      if (fromId === null) {
        throw conflict(
          'not_started',
          `Requirement ${requirementId} has not run yet: it runs on the runner of whoever starts it, so start it here`,
        );
      }
      if (fromId === board.runnerId) {
        throw conflict('already_here', `Requirement ${requirementId} already runs on this runner`);
      }
      if (before.status === 'cancelled') {
        throw conflict('requirement_closed', `Requirement ${requirementId} is cancelled`);
      }
      const runners = await board.runners();
      const from = runners.find((r) => r.id === fromId);
      const here = runners.find((r) => r.id === board.runnerId);
      if (from?.online && before.session.state === 'running') {
        throw conflict(
          'run_active',
          `Requirement ${requirementId} is running on ${runnerLabel(from)}: stop it first (its stop reaches that runner), then move it`,
        );
      }
      const remote = await this.branches.remote();
      const branch: MovedBranch =
        remote === null
          ? {
              branch: before.worktree?.branch ?? null,
              fetched: null,
              reason: 'this repository has no origin remote to fetch the branch from',
            }
          : await this.worktrees.fetchForMove(requirementId, remote);
      const outcome = await this.database.write(async (tx) => {
        const rows = await this.requirements.loadForWrite(tx, requirementId);
        if (rows.requirement.runnerId !== fromId) {
          throw conflict(
            'moved_meanwhile',
            `Requirement ${requirementId} was moved or started elsewhere meanwhile; look again before moving it`,
          );
        }
        if (from?.online && rows.session.state === 'running') {
          // Its runner, online, started a run while the branch was fetched.
          throw conflict(
            'run_active',
            `Requirement ${requirementId} is running on ${runnerLabel(from)}: stop it first (its stop reaches that runner), then move it`,
          );
        }
        const now = this.clock.nowIso();
        const lost = `its runner, ${runnerLabel(from)}, went away during this run; the Requirement was moved to ${runnerLabel(here)}`;
        this.requirementLifecycle.moveToRunner(tx, rows, board.runnerId, now);
        await this.worktrees.stageMoved(tx, rows, branch);
        const { orphanedRunId, run } = await this.lifecycle.takeOverMoved(tx, rows, actor, lost);
        await this.messages.append(
          tx,
          rows,
          {
            args: {
              branch: branch.branch,
              commit: branch.fetched === null ? null : branch.fetched.slice(0, 12),
              fromHost: from?.host ?? null,
              fromPerson: from?.personName ?? null,
              orphanedRunId,
              reason: branch.reason,
              toHost: here?.host ?? null,
              toPerson: here?.personName ?? null,
            },
            author: 'system',
            body: moveNotice(runnerLabel(from), runnerLabel(here), branch, orphanedRunId, rows.session.provider),
            code: 'requirement.moved',
            deliverToRd: false,
          },
          actor,
        );
        await this.events.append(tx, {
          actor,
          payload: {
            fromRunnerId: fromId,
            orphanedRunId,
            requirement: toRequirementResponse(rows.requirement, rows.session),
            toRunnerId: board.runnerId,
          },
          requirementId,
          sessionId: rows.session.id,
          type: 'requirement.moved',
        });
        return { orphanedRunId, run };
      });
      if (outcome.run) {
        this.lifecycle.launch(outcome.run);
      }
      this.logger.log({
        ...audit(actor),
        branch: branch.branch,
        fetched: branch.fetched,
        from: fromId,
        msg: 'requirement moved to this runner',
        orphanedRunId: outcome.orphanedRunId,
        requirementId,
      });
      return {
        branch,
        orphanedRunId: outcome.orphanedRunId,
        requirement: await this.requirements.get(requirementId),
        run: outcome.run ? toRunResponse(outcome.run) : null,
      };
    });
  }
}

/** The conversation's account of a move (English; the dashboard writes it from the code and its arguments). */
export function moveNotice(
  from: string,
  to: string,
  branch: MovedBranch,
  orphanedRunId: string | null,
  provider: string,
): string {
  const lines = [`Moved from ${from} to ${to}.`];
  if (orphanedRunId !== null) {
    lines.push(
      `The run ${orphanedRunId} was lost with its runner; nothing it was given was consumed, so it is delivered again here.`,
    );
  }
  if (branch.branch !== null) {
    lines.push(
      branch.fetched !== null
        ? `Its branch ${branch.branch} continues from ${branch.fetched.slice(0, 12)}, as last pushed to origin; work its old runner did not push stays on that machine.`
        : `Its branch ${branch.branch} could not be fetched (${branch.reason ?? 'unknown reason'}): the next run starts it again from its base here.`,
    );
  }
  lines.push(
    `The ${provider === 'claude-code' ? 'Claude Code' : 'Codex'} session lives on the old machine, so this continues as a new session given the conversation so far.`,
  );
  return lines.join('\n');
}
