import { Inject, Injectable, Logger } from '@nestjs/common';

import { CheckpointKind, EventActor, ManagerEvent } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { conflict, notFound } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import { isId, newId } from '../core/ids';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { MessageResponseDto } from '../messages/dto/message-response.dto';
import { MessagesService, NewMessage } from '../messages/messages.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { RequirementsService } from '../requirements/requirements.service';
import { rewindAgentRepository } from './agent-repository';
import { AgentWork, ImportedWork } from './agent-work.service';
import { CheckpointDto, RewindDto, RewindResponseDto, toCheckpoint } from './dto/checkpoint.dto';
import { CheckpointsRepository } from './checkpoints.repository';
import { RequirementCheckpointEntity } from './requirement-checkpoint.entity';
import { QUICK_TIMEOUT_MS, WorkspaceGit } from './workspace-git.service';
import { WorktreesService } from './worktrees.service';

/** Where a Requirement's checkpoints are kept in the person's repository (one ref each keeps its commit). */
const refPrefix = (requirementId: string) => `refs/agent-manager/checkpoints/${requirementId}/`;
/** A checkpoint's files-changed count reads at most this much of `git diff --name-only`. */
const NAMES_MAX_BYTES = 8 * 1024 * 1024;

const checkpointNotFound = (id: string) => notFound('checkpoint_not_found', `Checkpoint ${id} not found`);
const runActive = (requirementId: string) =>
  conflict('run_active', `Requirement ${requirementId} has an active run; stop it before a rewind`);

/**
 * Checkpoints and rewind (issue 46 §5–6): at each RD run's start and end the agent's whole working
 * state — its branch's head with the staged, unstaged and untracked files on top — as imported
 * into the person's repository (AgentWork's snapshot: the agent's own index, tree and HEAD are not
 * touched), kept by a private ref there; a rewind takes one more, then puts the agent's branch and
 * files back at a checkpoint and tells the agent what was undone.
 */
@Injectable()
export class CheckpointsService {
  private readonly logger = new Logger(CheckpointsService.name);

  constructor(
    private readonly agentWork: AgentWork,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly messages: MessagesService,
    private readonly repository: CheckpointsRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
  ) {}

  /** GET /requirements/:id/checkpoints (404 for an unknown Requirement). */
  async list(requirementId: string): Promise<CheckpointDto[]> {
    await this.requirements.get(requirementId);
    return (await this.repository.list(requirementId)).map(toCheckpoint);
  }

  /** One of the Requirement's checkpoints (404 otherwise, another Requirement's included). */
  async get(requirementId: string, id: string): Promise<CheckpointDto> {
    const row = isId('checkpoint', id) ? await this.repository.find(requirementId, id) : null;
    if (!row) {
      throw checkpointNotFound(id);
    }
    return toCheckpoint(row);
  }

  /**
   * Before an RD run's agent starts (its working copy prepared): the state it starts from. A
   * working copy made just now that nothing has run in holds `untouchedAt`'s files exactly: that
   * commit is the checkpoint, without an import hashing every file of it. A checkpoint that cannot
   * be taken is logged; the run goes on.
   */
  async atRunStart(requirementId: string, runId: string, untouchedAt: string | null): Promise<void> {
    await this.worktrees
      .whileHeld(requirementId, async () => {
        const imported =
          untouchedAt === null
            ? await this.worktrees.importWork(requirementId)
            : await this.asMade(requirementId, untouchedAt);
        return this.take(imported, runId, 'run_start');
      })
      .catch((err: unknown) => this.warn(requirementId, err));
  }

  /** What an import of a working copy that holds exactly `commit` would bring (its row as recorded). */
  private async asMade(requirementId: string, commit: string): Promise<ImportedWork> {
    const row = await this.worktrees.recorded(requirementId);
    if (row === null) {
      return this.worktrees.importWork(requirementId);
    }
    return { dirty: false, error: null, head: commit, row, work: commit };
  }

  /** After an RD run: its work imported (and published, as every run's end is) and checkpointed. */
  async afterRun(requirementId: string, runId: string): Promise<void> {
    await this.worktrees
      .refresh(requirementId, SYSTEM_ACTOR, async (imported) => {
        await this.take(imported, runId, 'run_end').catch((err: unknown) => this.warn(requirementId, err));
      })
      .catch((err: unknown) => this.warn(requirementId, err));
  }

  /**
   * POST /requirements/:id/rewind: refused while a run is active; takes a `rewind` checkpoint of
   * now first (rewinding to it undoes this), appends the system message the agent's next run
   * reads — in a unit that sees no run, so a run opened after it has it in its input (and its
   * preparation waits for this rewind) — then restores the agent's branch and files to the
   * checkpoint and imports the result.
   */
  async rewind(requirementId: string, dto: RewindDto, actor: EventActor): Promise<RewindResponseDto> {
    const target = await this.get(requirementId, dto.checkpointId);
    return this.worktrees.whileHeld(requirementId, async () => {
      const requirement = await this.requirements.get(requirementId);
      const own = this.runtime.board?.runnerId ?? null;
      if (own !== null && requirement.runner !== null && requirement.runner.id !== own) {
        throw conflict('runs_on_other_runner', `Requirement ${requirementId} runs on another runner; rewind it there`);
      }
      if (requirement.session.state === 'running') {
        throw runActive(requirementId);
      }
      const now = await this.worktrees.importWork(requirementId);
      const { row } = now;
      if (
        row?.layout !== 'own_repository' ||
        row.path === null ||
        row.removedAt !== null ||
        row.branch === null ||
        now.error !== null
      ) {
        throw conflict(
          'rewind_unavailable',
          now.error ?? `Requirement ${requirementId} has no working copy of its own to rewind (in place, or removed)`,
        );
      }
      const saved = await this.take(now, null, 'rewind');
      if (!saved) {
        throw conflict('rewind_unavailable', `Requirement ${requirementId}'s working state could not be saved first`);
      }
      const note = dto.note?.trim() ? dto.note.trim() : null;
      const what = target.runId
        ? `the work after checkpoint ${target.id} (${target.kind} of run ${target.runId})`
        : `the work after checkpoint ${target.id}`;
      const message = await this.system(requirementId, actor, true, {
        args: { checkpoint: target.id, kind: target.kind, note, run: target.runId, saved: saved.id },
        body:
          `Agent Manager: the person rewound your working copy: ${what} was undone; your branch is back at ${target.head.slice(0, 12)} with the files as they were then. ` +
          `What was there before the rewind is kept as checkpoint ${saved.id}.${note ? `\nTheir note: ${note}` : ''}`,
        code: 'requirement.rewound',
        metadata: { checkpointId: target.id, savedCheckpointId: saved.id },
      });
      const { git: dirs, repo } = await this.workspace.repositoryFacts();
      try {
        await rewindAgentRepository(
          {
            index: this.agentWork.snapshotIndex(requirementId),
            personCommonDir: dirs.commonDir,
            personTop: repo.top,
            top: row.path,
          },
          { branch: row.branch, commit: target.commit, head: target.head },
        );
      } catch (err) {
        const reason = (err as Error).message;
        this.logger.warn({ error: reason, msg: 'rewind failed', requirementId });
        await this.system(requirementId, actor, false, {
          body: `Agent Manager: the rewind to checkpoint ${target.id} failed (${reason}); the working copy may be partly rewound. Checkpoint ${saved.id} holds what was there before.`,
          metadata: { checkpointId: target.id, savedCheckpointId: saved.id },
        });
        throw conflict(
          'rewind_failed',
          `the rewind failed: ${reason}; checkpoint ${saved.id} holds what was there before`,
        );
      } finally {
        // Its branch and the manager's index of it changed under the import's bookkeeping.
        this.agentWork.forgetFetched(requirementId);
        await this.worktrees.importWork(requirementId).catch((err: unknown) => this.warn(requirementId, err));
      }
      this.logger.log({ checkpointId: target.id, msg: 'requirement rewound', requirementId, saved: saved.id });
      return { message, restored: target, saved };
    });
  }

  /** A system message in the Requirement's conversation, for its agent's next run; `first`: refused while a run is active. */
  private system(
    requirementId: string,
    actor: EventActor,
    first: boolean,
    input: Pick<NewMessage, 'args' | 'body' | 'code' | 'metadata'>,
  ): Promise<MessageResponseDto> {
    return this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      if (first && rows.session.state === 'running') {
        throw runActive(requirementId);
      }
      const appended = await this.messages.append(tx, rows, { ...input, author: 'system', deliverToRd: true }, actor);
      return appended.message;
    });
  }

  /** A purge takes the Requirements' checkpoint refs with them (their rows go by ON DELETE CASCADE). */
  @OnCommitted(['requirements.purged'])
  async purged(events: ManagerEvent[]): Promise<void> {
    const repo = await this.workspace.gitWorkspace();
    if (repo === null) {
      return;
    }
    for (const event of events) {
      if (event.type !== 'requirements.purged') {
        continue;
      }
      for (const requirementId of event.payload.requirementIds) {
        const refs = await git(['for-each-ref', '--format=%(refname)', refPrefix(requirementId)], {
          cwd: repo.top,
          timeoutMs: QUICK_TIMEOUT_MS,
        });
        for (const ref of refs.stdout.split('\n').filter((r) => r.startsWith(refPrefix(requirementId)))) {
          await git(['update-ref', '-d', ref], { cwd: repo.top, timeoutMs: QUICK_TIMEOUT_MS });
        }
      }
    }
  }

  /**
   * Records a checkpoint of what an import brought (nothing when it brought nothing: no working
   * copy of its own, or the import was refused). Called while the Requirement is held.
   */
  private async take(
    imported: ImportedWork,
    runId: string | null,
    kind: CheckpointKind,
  ): Promise<CheckpointDto | null> {
    const { row } = imported;
    if (
      !row ||
      row.layout !== 'own_repository' ||
      imported.error !== null ||
      imported.head === null ||
      imported.work === null
    ) {
      return null;
    }
    const { repo } = await this.workspace.repositoryFacts();
    const requirementId = row.requirementId;
    const previous = await this.repository.latest(requirementId);
    const since = previous?.commit ?? row.baseSha;
    const id = newId('checkpoint');
    await git(['update-ref', '-m', 'agent-manager: checkpoint', `${refPrefix(requirementId)}${id}`, imported.work], {
      cwd: repo.top,
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const filesChanged = since === null ? 0 : await this.countChanged(repo.top, since, imported.work);
    const checkpoint: RequirementCheckpointEntity = {
      at: this.clock.nowIso(),
      commit: imported.work,
      filesChanged,
      head: imported.head,
      id,
      kind,
      requirementId,
      runId,
    };
    await this.database.write(async (tx) => {
      const rows = await this.requirements.loadForWrite(tx, requirementId);
      this.repository.insert(tx, checkpoint);
      await this.events.append(tx, {
        actor: SYSTEM_ACTOR,
        payload: { checkpoint: toCheckpoint(checkpoint) },
        requirementId,
        runId,
        sessionId: rows.session.id,
        type: 'checkpoint.created',
      });
    });
    return toCheckpoint(checkpoint);
  }

  /** Files that differ between two commits; 0 when git cannot say (a commit another runner made is not here). */
  private async countChanged(top: string, from: string, to: string): Promise<number> {
    if (from === to) {
      return 0;
    }
    const out = await git(['diff', '--name-only', '-z', '--no-renames', from, to, '--'], {
      allowTruncated: true,
      cwd: top,
      maxBytes: NAMES_MAX_BYTES,
      timeoutMs: QUICK_TIMEOUT_MS,
    }).catch(() => null);
    return out === null ? 0 : out.stdout.split('\0').filter((name) => name !== '').length;
  }

  private warn(requirementId: string, err: unknown): void {
    this.logger.warn({ error: (err as Error).message, msg: 'no checkpoint taken', requirementId });
  }
}
