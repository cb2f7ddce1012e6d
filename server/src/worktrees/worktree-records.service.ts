import { createHash } from 'node:crypto';
import * as path from 'node:path';

import { Inject, Injectable } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { OnDomainEvent } from '../core/domain-events';
import { conflict, invalid, notFound } from '../core/errors/domain-error';
import { RUNTIME, Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import type { CreatingStager } from '../requirements/requirement.events';
import type { NewRequirement } from '../requirements/new-requirement';
import { RequirementsService } from '../requirements/requirements.service';
import { RequirementWorktreeEntity, WORKTREE_PORT_BLOCK } from '../requirements/requirement-worktree.entity';
import { isInside } from './worktree-changes';
import { GitWorkspace, WorkspaceGit } from './workspace-git.service';
import { WorktreesRepository } from './worktrees.repository';

/**
 * Ports handed out in blocks of WORKTREE_PORT_BLOCK (AGENT_MANAGER_PORT is the first), one block
 * per Requirement, in 20000–31999: below the ephemeral ranges (Linux 32768–60999, macOS and
 * Windows 49152–65535), so an outgoing connection never holds a port a preview needs.
 */
export const PORT_FIRST = 20_000;
const WORKTREE_PORT_BLOCKS = 1_200;

/** A row for a Requirement that has no worktree yet: in place until its first run says otherwise. */
function emptyRow(
  requirementId: string,
  updatedAt: string,
  isolation: RequirementWorktreeEntity['isolation'],
  baseRef: string | null,
): RequirementWorktreeEntity {
  return {
    ahead: 0,
    baseRef,
    baseSha: null,
    behind: 0,
    branch: null,
    createdAt: null,
    dirty: false,
    headSha: null,
    importError: null,
    isolation,
    lastRunAt: null,
    layout: null,
    path: null,
    portBase: null,
    refreshedAt: null,
    removedAt: null,
    requirementId,
    setupAt: null,
    subdirectory: null,
    updatedAt,
    workSha: null,
  };
}

/**
 * Where a Requirement works and what its `requirement_worktree` row says: its isolation (chosen
 * in its creating unit), the row of one created before the table, its worktree's folder and
 * subfolder, its block of ports and the AGENT_MANAGER_* environment, and every later change to
 * the row, published with the Requirement's snapshot when the card shows it.
 */
@Injectable()
export class WorktreeRecords {
  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: WorktreesRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly workspace: WorkspaceGit,
  ) {}

  /**
   * On create: where the Requirement will work. An explicit `worktree` outside a git
   * repository, or a base ref git does not know, is a 400 before anything is written.
   */
  @OnDomainEvent('requirement.creating')
  async placeFor(input: NewRequirement): Promise<CreatingStager> {
    const { isolation, repo } = await this.isolationFor(input);
    let baseRef: string | null = null;
    if (isolation === 'worktree' && repo !== null) {
      baseRef = input.baseRef ?? repo.branch ?? repo.head;
      if (input.baseRef !== undefined && (await this.workspace.resolveCommit(repo.top, input.baseRef)) === null) {
        throw invalid('unknown_base_ref', `git knows no branch, tag or commit named ${input.baseRef}`);
      }
    }
    return (tx, requirement) => {
      const row = emptyRow(requirement.id, requirement.createdAt, isolation, baseRef);
      this.repository.insert(tx, row);
      requirement.worktree = row;
    };
  }

  /**
   * Where a new Requirement works (issue 44 §4). In place only by the person's choice — on the
   * request, or by configuration — or where the workspace has never been a repository with a
   * commit; a git that fails, or a repository that seems gone, is a 503, never "in place". An
   * agent never gets a place it does not have: not in place when it asks, and not in place below
   * a Requirement of its own that is contained in a worktree.
   */
  private async isolationFor(
    input: NewRequirement,
  ): Promise<{ isolation: 'worktree' | 'in_place'; repo: GitWorkspace | null }> {
    const fromAgent = input.createdBy !== 'human';
    const refuseAgent = (why: string) =>
      conflict(
        'in_place_not_for_agents',
        `an agent cannot propose work that runs in place, in the person's checkout (${why}); only a person chooses that`,
      );
    if (fromAgent && input.isolation === 'in_place') {
      throw refuseAgent('isolation "in_place" was asked for');
    }
    if (input.isolation === 'in_place' && input.baseRef !== undefined) {
      throw invalid(
        'base_ref_in_place',
        'baseRef needs isolation "worktree": in place the agent works on whatever the checkout has',
      );
    }
    if (input.isolation === 'in_place') {
      return { isolation: 'in_place', repo: null };
    }
    const repo = await this.workspace.placeFacts();
    if (repo === null && (input.isolation === 'worktree' || input.baseRef !== undefined)) {
      throw invalid(
        'worktree_unavailable',
        `the workspace ${this.runtime.paths.root} is not a git repository with a commit, so it cannot have worktrees; use isolation "in_place"`,
      );
    }
    const asked = input.isolation ?? (input.baseRef !== undefined ? 'worktree' : this.configuration.get('isolation'));
    const isolation = repo === null ? 'in_place' : asked;
    if (fromAgent && isolation === 'in_place' && input.parentRequirementId) {
      const parent = await this.repository.find(input.parentRequirementId);
      if (parent?.isolation !== 'in_place') {
        throw refuseAgent(
          repo === null
            ? 'the workspace is not a git repository with a commit now'
            : 'the configuration runs new Requirements in place',
        );
      }
    }
    return { isolation, repo };
  }

  /** The Requirement's row; one created before this table had rows for everything gets one, in place. */
  async findOrAdopt(requirementId: string): Promise<RequirementWorktreeEntity> {
    return (await this.repository.find(requirementId)) ?? (await this.adopt(requirementId));
  }

  /** A Requirement created before this table had rows for everything: it keeps working in place. */
  private async adopt(requirementId: string): Promise<RequirementWorktreeEntity> {
    if ((await this.requirements.find(requirementId)) === null) {
      throw notFound('requirement_not_found', `Requirement ${requirementId} not found`);
    }
    const row = emptyRow(requirementId, this.clock.nowIso(), 'in_place', null);
    await this.database.write(async (uow) => this.repository.insert(uow, row));
    return row;
  }

  /**
   * The first free block of 10 ports from this workspace's own starting block (the unique index is
   * the backstop). Each workspace starts somewhere else in the range (from its data directory's
   * name), so two managers on one machine do not hand their Requirements the same ports.
   */
  reservePorts(requirementId: string): Promise<number> {
    const start = createHash('sha256').update(this.runtime.paths.dataDirectory).digest().readUInt32BE(0);
    return this.database.write(async (uow) => {
      const used = new Set(await this.repository.usedPortBases(uow));
      for (let i = 0; i < WORKTREE_PORT_BLOCKS; i += 1) {
        const block = (start + i) % WORKTREE_PORT_BLOCKS;
        const base = PORT_FIRST + block * WORKTREE_PORT_BLOCK;
        if (!used.has(base)) {
          this.repository.update(uow, requirementId, { portBase: base });
          return base;
        }
      }
      throw conflict('ports_exhausted', `all ${WORKTREE_PORT_BLOCKS} port blocks are reserved by live Requirements`);
    });
  }

  /** What a run (or a teardown) learns of its place through the environment. */
  environment(place: { worktree: string; branch: string; baseRef: string; port: number }): Record<string, string> {
    return {
      AGENT_MANAGER_BASE_REF: place.baseRef,
      AGENT_MANAGER_BRANCH: place.branch,
      AGENT_MANAGER_PORT: String(place.port),
      AGENT_MANAGER_ROOT: this.runtime.paths.root,
      AGENT_MANAGER_WORKTREE: place.worktree,
    };
  }

  /**
   * Updates the row and, when `publish`, the Requirement's snapshot with a `requirement.updated`
   * event (the card shows branch, ahead and dirty). Returns the row as written.
   */
  save(
    requirementId: string,
    set: Partial<RequirementWorktreeEntity>,
    publish: boolean,
    actor: EventActor = SYSTEM_ACTOR,
  ): Promise<RequirementWorktreeEntity> {
    return this.database.write(async (uow) => {
      const rows = await this.requirements.loadForWrite(uow, requirementId);
      // From the table, not the cached snapshot: other writes (a port block) change the row alone.
      const current = await this.repository.findForWrite(uow, requirementId);
      const updatedAt = this.clock.nowIso();
      const next: RequirementWorktreeEntity = { ...current, ...set, updatedAt };
      this.repository.update(uow, requirementId, { ...set, updatedAt });
      rows.requirement.worktree = next;
      if (publish) {
        await this.events.append(uow, {
          actor,
          payload: { requirement: toRequirementResponse(rows.requirement, rows.session) },
          requirementId,
          sessionId: rows.session.id,
          type: 'requirement.updated',
        });
      }
      return next;
    });
  }

  /** Where in its worktree the agent works: the configured folder, or the workspace's own place below the repository's top. */
  subdirectory(repo: GitWorkspace): string | null {
    const configured = this.configuration.get('worktreeSubdirectory');
    if (configured !== null) {
      return path.normalize(configured);
    }
    // A workspace bound below the repository's top: the agent works in the same folder of its worktree.
    const relative = path.relative(repo.top, this.runtime.paths.root);
    return relative === '' ? null : relative;
  }

  /** A free folder for a new worktree under the workspace's worktree folder, named after the Requirement. */
  async choosePath(requirementId: string): Promise<string> {
    const short = requirementId.replace(/^req_/, '').replace(/-/g, '').slice(0, 8);
    for (let n = 1; ; n += 1) {
      const candidate = path.join(this.workspace.directory, n === 1 ? short : `${short}-${n}`);
      if (!(await this.repository.pathTaken(candidate, requirementId))) {
        return candidate;
      }
    }
  }

  /** Agents cannot see the data directories: a worktree there would be invisible to its own agent. */
  insideDataDirectory(target: string): boolean {
    return (
      isInside(target, path.join(this.runtime.paths.home, 'workspaces')) ||
      isInside(target, this.runtime.paths.dataDirectory)
    );
  }
}
