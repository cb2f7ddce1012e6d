import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';

import type { EventActor, LocalLandMethod } from '@libs/contracts';

import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { DomainEvents } from '../core/domain-events';
import { DomainError, conflict } from '../core/errors/domain-error';
import { EventLog, SYSTEM_ACTOR, audit } from '../events/event-log.service';
import { MessagesService } from '../messages/messages.service';
import { RequirementResponseDto, toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { RequirementLandingEntity } from '../requirements/requirement-landing.entity';
import { RequirementsService } from '../requirements/requirements.service';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import { WorktreesService } from '../worktrees/worktrees.service';
import { ConflictRadar } from './conflict-radar.service';
import { agentSummary, headMoved, listed, refuseUnlandable, takeWork } from './land-steps';
import {
  commitFacts,
  commitTree,
  commitsSince,
  compareAndSwap,
  fastForwardCheckout,
  isAncestor,
  mergeTrees,
  pickOnto,
  resolve,
  treeOf,
  uncommittedFiles,
  worktreeBranches,
} from './landing-git';
import './landing.events';
import { LandingRepository } from './landing.repository';

export interface LocalLand {
  method: LocalLandMethod;
  /**
   * The work the person was shown (Changes' headSha: the branch with its uncommitted files when
   * there were any): a land takes exactly that or is refused with head_moved. Absent: the work as
   * it is now.
   */
  expectedHead?: string;
  /** Commit the worktree's uncommitted work on its branch first, instead of refusing. */
  commitPending?: boolean;
  /** Confirm the Requirement done once landed (when it waits for confirmation). Default true. */
  markDone?: boolean;
  /** The commit message of a merge or squash, as the person wrote it (absent: landMessage's). */
  message?: string;
}

export interface LocalLandOutcome {
  requirement: RequirementResponseDto;
  commit: string;
}

/** Attempts when the base moves between reading it and moving it (someone else landed, a person committed). */
const ATTEMPTS = 3;

/**
 * Lands a Requirement's branch on its base, locally (issue 28 §1): a merge commit, one squashed
 * commit, or its commits replayed — each computed on git objects (`merge-tree`, `commit-tree`)
 * while the Requirement's worktree and the repository are held, then the base moved by
 * compare-and-swap, or, where the base is checked out, by a fast-forward of that (clean) checkout.
 * Nothing uncommitted is ever touched, and a refusal leaves every branch and checkout as it was.
 *
 * Exactly once across kills: the commit about to land is recorded before the base moves, and
 * whoever finds such a record (a retry, the next start) asks git whether the base holds it — then
 * the land is recorded — or forgets it.
 */
@Injectable()
export class LandingService implements OnApplicationBootstrap {
  private readonly logger = new Logger(LandingService.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventLog,
    private readonly messages: MessagesService,
    private readonly radar: ConflictRadar,
    private readonly repository: LandingRepository,
    private readonly requirements: RequirementsService,
    private readonly workspace: WorkspaceGit,
    private readonly worktrees: WorktreesService,
  ) {}

  /** Lands a kill left in flight: recorded when the base holds it, else forgotten. */
  async onApplicationBootstrap(): Promise<void> {
    for (const row of await this.repository.pending()) {
      await this.worktrees
        .whileHeld(row.requirementId, () => this.settle(row, SYSTEM_ACTOR))
        .catch((err: unknown) =>
          this.logger.warn(`could not settle the land in flight of ${row.requirementId}: ${(err as Error).message}`),
        );
    }
  }

  async land(id: string, options: LocalLand, actor: EventActor): Promise<LocalLandOutcome> {
    const before = await this.requirements.get(id);
    refuseUnlandable(before);
    const repo = await this.workspace.gitWorkspace();
    if (repo === null) {
      throw conflict(
        'workspace_not_git',
        `the workspace is no longer a git repository with a commit: there is no base to land ${before.title} on`,
      );
    }
    const baseRef = before.baseRef as string;
    if (!(await this.workspace.branchExists(repo.top, baseRef))) {
      throw conflict(
        'base_not_branch',
        `the base ref ${baseRef} is not a local branch: open a pull request instead (method "pull_request")`,
      );
    }
    const started = Date.now();
    const outcome = await this.worktrees.whileHeld(id, () =>
      this.workspace.inRepository(repo.top, () => this.landHeld(id, repo.top, baseRef, options, actor)),
    );
    this.logger.log({
      ...audit(actor),
      commit: outcome.commit,
      method: options.method,
      ms: Date.now() - started,
      msg: 'requirement landed',
      requirementId: id,
    });
    // The branch and the base moved: the answer carries the worktree's new figures, and the radar looks again.
    await this.worktrees
      .refresh(id)
      .catch((err: unknown) => this.logger.warn(`could not refresh the worktree of ${id}: ${(err as Error).message}`));
    void this.radar.refresh();
    return { ...outcome, requirement: await this.requirements.get(id) };
  }

  private async landHeld(
    id: string,
    top: string,
    baseRef: string,
    options: LocalLand,
    actor: EventActor,
  ): Promise<LocalLandOutcome> {
    const requirement = await this.requirements.get(id);
    refuseUnlandable(requirement);
    const landing = await this.landingOf(id);
    if (landing?.pendingCommit) {
      const settled = await this.settle(landing, actor, options.markDone !== false);
      if (settled !== null) {
        return settled;
      }
    }
    const branch = requirement.worktree?.branch as string;
    const taken = await takeWork(this.worktrees, requirement, options);
    for (let attempt = 1; ; attempt += 1) {
      const head = await resolve(top, `refs/heads/${branch}`);
      if (head !== taken) {
        throw headMoved(requirement, taken, head);
      }
      const base = await resolve(top, `refs/heads/${baseRef}`);
      if (base === null) {
        throw conflict('base_not_branch', `the base branch ${baseRef} no longer exists`);
      }
      if (await isAncestor(top, head, base)) {
        throw conflict('nothing_to_land', `${baseRef} already has everything on ${branch}`);
      }
      const landed = await this.compose(top, options, base, head, branch, requirement);
      const holder = (await worktreeBranches(top)).find((t) => t.branch === `refs/heads/${baseRef}`);
      if (holder) {
        const dirty = await uncommittedFiles(holder.path, false);
        if (dirty.length > 0) {
          throw conflict(
            'base_checked_out_dirty',
            `${baseRef} is checked out in ${holder.path} with uncommitted changes (${listed(dirty)}): commit or stash them there, then land again`,
            dirty,
          );
        }
      }
      // Journal first: a kill from here on is settled by asking git whether the base holds it.
      await this.database.write(async (tx) => {
        await this.repository.save(
          tx,
          id,
          { pendingBaseRef: baseRef, pendingCommit: landed, pendingMethod: options.method },
          this.clock.nowIso(),
        );
      });
      let moved: boolean;
      let refusal: string | null = null;
      if (holder) {
        refusal = await fastForwardCheckout(holder.path, landed);
        moved = refusal === null;
      } else {
        moved = await compareAndSwap(
          top,
          `refs/heads/${baseRef}`,
          landed,
          base,
          `agent-manager: land ${id} (${options.method})`,
        );
      }
      if (!moved) {
        await this.forgetPending(id);
        const baseNow = await resolve(top, `refs/heads/${baseRef}`);
        if (baseNow !== base && attempt < ATTEMPTS) {
          continue; // the base moved meanwhile: compose again on its new commit
        }
        if (refusal !== null) {
          throw conflict(
            'base_checked_out_dirty',
            `${baseRef} is checked out in ${holder?.path}, and git would not move it: ${refusal}`,
          );
        }
        throw conflict(
          'base_moved',
          `${baseRef} kept moving while "${requirement.title}" was being landed: land again`,
        );
      }
      if (options.method !== 'merge') {
        await this.worktrees
          .followLand(id, head, landed)
          .catch((err: unknown) =>
            this.logger.warn(`the branch ${branch} stays where it was after its land: ${(err as Error).message}`),
          );
      }
      // What the agent's branch holds after this land: the landed commit (followed), or the head merged.
      const work = options.method === 'merge' ? head : landed;
      return this.record(id, landed, options.method, actor, options.markDone !== false, work);
    }
  }

  /** The commit that lands `head` on `base` by `method`; a conflict refuses with its files. */
  private async compose(
    top: string,
    { method, message }: LocalLand,
    base: string,
    head: string,
    branch: string,
    requirement: RequirementResponseDto,
  ): Promise<string> {
    const refuse = (paths: string[]) =>
      conflict(
        'land_conflict',
        `"${requirement.title}" conflicts with ${requirement.baseRef} in ${listed(paths)}: ask its agent to rebase onto ${requirement.baseRef} and resolve them`,
        paths,
      );
    if (method === 'rebase') {
      let onto = base;
      for (const commit of await commitsSince(top, base, head)) {
        const facts = await commitFacts(top, commit);
        if (facts.parents.length > 1) {
          continue; // a merge: its sides' commits are replayed one by one, as git rebase does
        }
        if (facts.parents[0] === onto) {
          onto = commit; // already on top: kept as it is
          continue;
        }
        const picked = await pickOnto(top, onto, commit, facts.parents[0]);
        if (!picked.clean) {
          throw refuse(picked.paths);
        }
        if (picked.tree === (await treeOf(top, onto))) {
          continue; // the base already has this change
        }
        onto = await commitTree(top, picked.tree, [onto], facts.message, facts.env);
      }
      if (onto === base) {
        throw conflict('nothing_to_land', `${requirement.baseRef} already has every change on ${branch}`);
      }
      return onto;
    }
    const merged = await mergeTrees(top, base, head);
    if (!merged.clean) {
      throw refuse(merged.paths);
    }
    if (method === 'merge') {
      return commitTree(top, merged.tree, [base, head], message ?? (await this.defaultMessage(method, requirement)));
    }
    if (merged.tree === (await treeOf(top, base))) {
      throw conflict('nothing_to_land', `${requirement.baseRef} already has every change on ${branch}`);
    }
    return commitTree(top, merged.tree, [base], message ?? (await this.defaultMessage(method, requirement)));
  }

  /**
   * GET /requirements/:id/land-message: the commit message a merge or squash of the Requirement
   * writes unless the person writes their own — its title, then what its agent said last (a
   * squash), never a system line.
   */
  async landMessage(id: string, method: 'merge' | 'squash'): Promise<string> {
    return this.defaultMessage(method, await this.requirements.get(id));
  }

  private async defaultMessage(method: LocalLandMethod, requirement: RequirementResponseDto): Promise<string> {
    if (method === 'merge') {
      const branch = requirement.worktree?.branch ?? 'its branch';
      return `Merge branch '${branch}': ${requirement.title}\n\nLanded by Agent Manager (Requirement ${requirement.id}).`;
    }
    const summary = await agentSummary(this.messages, requirement.id);
    return `${requirement.title}\n\n${summary ? `${summary}\n\n` : ''}Requirement: ${requirement.id}`;
  }

  /** Records the land, meets what waits for the merge, and confirms the Requirement done when asked. */
  private async record(
    id: string,
    commit: string,
    method: LocalLandMethod,
    actor: EventActor,
    markDone: boolean,
    landedWork: string | null,
  ): Promise<LocalLandOutcome> {
    const requirement = await this.database.write(async (tx) => {
      const now = this.clock.nowIso();
      const rows = await this.requirements.loadForWrite(tx, id);
      rows.requirement.landing = await this.repository.save(
        tx,
        id,
        {
          landedAt: now,
          landedCommit: commit,
          landedMethod: method,
          landedWork,
          pendingBaseRef: null,
          pendingCommit: null,
          pendingMethod: null,
        },
        now,
      );
      await this.domainEvents.emit('requirement.landed', tx, rows, { commit, method });
      if (markDone && rows.requirement.status === 'waiting_confirmation') {
        return this.requirements.confirmIn(tx, id, actor);
      }
      const snapshot = toRequirementResponse(rows.requirement, rows.session);
      await this.events.append(tx, {
        actor,
        payload: { requirement: snapshot },
        requirementId: id,
        sessionId: rows.session.id,
        type: 'requirement.updated',
      });
      return snapshot;
    });
    return { commit, requirement };
  }

  /** A land found in flight: recorded when its base holds the commit (returns the outcome), else forgotten (null). */
  private async settle(
    row: RequirementLandingEntity,
    actor: EventActor,
    markDone = true,
  ): Promise<LocalLandOutcome | null> {
    const repo = await this.workspace.gitWorkspace();
    const commit = row.pendingCommit as string;
    const base =
      repo === null || row.pendingBaseRef === null ? null : await resolve(repo.top, `refs/heads/${row.pendingBaseRef}`);
    if (repo !== null && base !== null && (await isAncestor(repo.top, commit, base).catch(() => false))) {
      this.logger.log({
        commit,
        msg: 'a land interrupted after the base moved is recorded',
        requirementId: row.requirementId,
      });
      return this.record(row.requirementId, commit, row.pendingMethod as LocalLandMethod, actor, markDone, null);
    }
    await this.forgetPending(row.requirementId);
    return null;
  }

  private async forgetPending(id: string): Promise<void> {
    await this.database.write(async (tx) => {
      await this.repository.save(
        tx,
        id,
        { pendingBaseRef: null, pendingCommit: null, pendingMethod: null },
        this.clock.nowIso(),
      );
    });
  }

  private landingOf(id: string): Promise<RequirementLandingEntity | null> {
    return this.repository.find(id);
  }
}

export function isRefusal(err: unknown, code: string): boolean {
  return err instanceof DomainError && err.code === code;
}
