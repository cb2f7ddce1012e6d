import { Injectable, Logger } from '@nestjs/common';

import { type EventActor, FORGE_SIGNS, type Forge, type PullRequestStatus } from '@libs/contracts';

import { AgentCaller, assertInScope } from '../auth/agent-scope.decorator';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { DomainEvents } from '../core/domain-events';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { conflict, invalid } from '../core/errors/domain-error';
import { newId } from '../core/ids';
import { EventLog, audit } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import {
  ListPullRequestsQueryDto,
  PullRequestPageDto,
  PullRequestResponseDto,
  RegisterPullRequestDto,
  toPullRequestResponse,
} from './dto/pull-request.dto';
import { PullRequestEntity } from './pull-request.entity';
import type { HeadChangeExtras } from './pull-request.events';
import { PullRequestsRepository } from './pull-requests.repository';

/**
 * Pull requests the RD agents open. Registration is idempotent by lower-cased repository and
 * number: the first call sets the lifecycle status, later ones refresh only metadata (the
 * reconciler owns the lifecycle, invariant 8). A PR belongs to one Requirement for good.
 */
/** What the reconciler learned about a PR from GitHub: the fields the manager keeps. */
export interface GitHubPullRequestState {
  status: PullRequestStatus;
  title: string;
  url: string;
  baseBranch: string;
  headBranch: string;
  headSha: string;
}

/** The review loop's columns of a PR. */
export type AutoReviewFields = Partial<
  Pick<
    PullRequestEntity,
    | 'autoReviewHeadSha'
    | 'autoReviewMaxRounds'
    | 'autoReviewOutcome'
    | 'autoReviewProvider'
    | 'autoReviewRound'
    | 'autoReviewState'
  >
>;

@Injectable()
export class PullRequestsService {
  private readonly logger = new Logger(PullRequestsService.name);

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly domainEvents: DomainEvents,
    private readonly events: EventLog,
    private readonly repository: PullRequestsRepository,
    private readonly requirements: RequirementsService,
  ) {}

  async register(dto: RegisterPullRequestDto, caller: AgentCaller, actor: EventActor): Promise<PullRequestResponseDto> {
    assertInScope(caller, { requirementId: dto.requirementId });
    // A merge request's address says GitLab: an agent that names no forge is not taken for GitHub.
    const urlForge = /\/-\/merge_requests\/\d+(?:[/?#]|$)/.test(dto.url) ? 'gitlab' : 'github';
    if (dto.forge !== undefined && dto.forge !== urlForge) {
      throw invalid(
        'forge_mismatch',
        `${dto.url} is not a ${dto.forge === 'gitlab' ? 'merge' : 'pull'} request address`,
      );
    }
    const forge = dto.forge ?? urlForge;
    if (forge === 'github' && dto.repository.split('/').length !== 2) {
      throw invalid('invalid_repository', `a GitHub repository is owner/name (got ${dto.repository})`);
    }
    const result = await this.database.write(async (tx) => {
      const { requirement, session } = await this.requirements.loadForWrite(tx, dto.requirementId);
      const repositoryKey = dto.repository.toLowerCase();
      const existing = await this.repository.findByKeyIn(tx, forge, repositoryKey, dto.number);
      if (existing && existing.requirementId !== requirement.id) {
        throw conflict(
          'pull_request_owned',
          `${dto.repository}${FORGE_SIGNS[forge]}${dto.number} is registered to Requirement ${existing.requirementId}`,
        );
      }
      const now = this.clock.nowIso();
      const metadata = {
        baseBranch: dto.baseBranch,
        headBranch: dto.headBranch,
        headSha: dto.headSha,
        repository: dto.repository,
        title: dto.title,
        url: dto.url,
      };
      let entity: PullRequestEntity;
      if (existing) {
        entity = { ...existing, ...metadata, updatedAt: now };
        this.repository.update(tx, existing.id, { ...metadata, updatedAt: now });
      } else {
        entity = {
          ...metadata,
          createdAt: now,
          githubFingerprint: null,
          githubMergeable: null,
          autoReviewHeadSha: null,
          autoReviewMaxRounds: null,
          autoReviewOutcome: null,
          autoReviewProvider: null,
          autoReviewRound: 0,
          autoReviewState: 'off',
          forge,
          githubObservedAt: null,
          id: newId('pullRequest'),
          number: dto.number,
          repositoryKey,
          requirementId: requirement.id,
          status: dto.status,
          updatedAt: now,
        };
        this.repository.insert(tx, entity);
      }
      const pullRequest = toPullRequestResponse(entity);
      const related = existing && existing.headSha !== entity.headSha ? await this.headChanged(tx, entity) : {};
      await this.events.append(tx, {
        actor,
        payload: { ...related, pullRequest },
        requirementId: requirement.id,
        sessionId: session.id,
        type: existing ? 'pull_request.updated' : 'pull_request.created',
      });
      return { created: !existing, pullRequest };
    });
    this.logger.log({
      ...audit(actor),
      created: result.created,
      msg: 'pull request registered',
      pullRequestId: result.pullRequest.id,
      requirementId: dto.requirementId,
    });
    return result.pullRequest;
  }

  /**
   * PRs the reconciler should look at now: every draft or open one, and closed ones not
   * checked for `closedRecheckMs` (a closed PR can be reopened; merged ones are final).
   * Least recently observed first.
   */
  async tracked(closedRecheckMs: number, closedLimit: number): Promise<PullRequestEntity[]> {
    const before = new Date(this.clock.now().getTime() - closedRecheckMs).toISOString();
    const [active, closed] = await Promise.all([
      this.repository.active(),
      this.repository.closedNotObservedSince(before, closedLimit),
    ]);
    return [...active, ...closed];
  }

  /** Tracked PRs of one forge by identity (repository in any case, and number), for the webhooks. */
  findByIdentity(
    forge: Forge,
    identities: ReadonlyArray<{ repository: string; number: number }>,
  ): Promise<PullRequestEntity[]> {
    return this.repository.byIdentity(
      forge,
      identities.map(({ number, repository }) => ({ number, repositoryKey: repository.toLowerCase() })),
    );
  }

  /** Tracked PRs whose head is `sha` in `repository` (a commit status names only the commit). */
  findByHead(forge: Forge, repository: string, sha: string): Promise<PullRequestEntity[]> {
    return this.repository.byHead(forge, repository.toLowerCase(), sha);
  }

  /**
   * Applies what GitHub says about a PR inside the caller's unit (the reconciler's, so the
   * status message commits with it): lifecycle, head and metadata. Publishes
   * `pull_request.updated` when anything visible changed. Returns the row as now stored.
   */
  async applyGitHubState(
    tx: UnitOfWork,
    id: string,
    state: GitHubPullRequestState,
    actor: EventActor,
  ): Promise<PullRequestEntity | null> {
    const current = await this.repository.findByIdIn(tx, id);
    if (!current) {
      return null; // purged meanwhile
    }
    const visible = {
      baseBranch: state.baseBranch,
      headBranch: state.headBranch,
      headSha: state.headSha,
      status: state.status,
      title: state.title,
      url: state.url,
    };
    const changed = (Object.keys(visible) as Array<keyof typeof visible>).some((key) => current[key] !== visible[key]);
    if (!changed) {
      return current;
    }
    const now = this.clock.nowIso();
    const updated: PullRequestEntity = { ...current, ...visible, updatedAt: now };
    this.repository.update(tx, id, { ...visible, updatedAt: now });
    const related = current.headSha !== updated.headSha ? await this.headChanged(tx, updated) : {};
    await this.events.append(tx, {
      actor,
      payload: { ...related, pullRequest: toPullRequestResponse(updated), previousStatus: current.status },
      requirementId: current.requirementId,
      type: 'pull_request.updated',
    });
    if (current.status !== updated.status) {
      await this.domainEvents.emit('pullRequest.statusChanged', tx, updated, current.status);
    }
    return updated;
  }

  /**
   * Records where a PR's review loop is (only the review loop calls this), with its
   * `pull_request.updated` event, inside the caller's unit. Returns the row as now staged.
   */
  async changeAutoReview(
    tx: UnitOfWork,
    pullRequest: PullRequestEntity,
    set: AutoReviewFields,
    actor: EventActor,
  ): Promise<PullRequestEntity> {
    const now = this.clock.nowIso();
    const updated: PullRequestEntity = { ...pullRequest, ...set, updatedAt: now };
    this.repository.update(tx, pullRequest.id, { ...set, updatedAt: now });
    await this.events.append(tx, {
      actor,
      payload: { pullRequest: toPullRequestResponse(updated) },
      requirementId: pullRequest.requirementId,
      type: 'pull_request.updated',
    });
    return updated;
  }

  /** These PRs (any that exist). */
  findByIds(ids: readonly string[]): Promise<PullRequestEntity[]> {
    return this.repository.findByIds(ids);
  }

  /** A PR as the unit sees it (null when unknown or purged). */
  findIn(tx: UnitOfWork, id: string): Promise<PullRequestEntity | null> {
    return this.repository.findByIdIn(tx, id);
  }

  /** Records what the reconciler last saw (after every delivery for it committed). */
  async markObserved(id: string, observation: { fingerprint: string | null; mergeable: string }): Promise<void> {
    await this.database.write(async (tx) =>
      this.repository.update(tx, id, {
        githubFingerprint: observation.fingerprint,
        githubMergeable: observation.mergeable,
        githubObservedAt: this.clock.nowIso(),
      }),
    );
  }

  /** A Requirement's PRs as the unit sees them. */
  ofRequirementIn(tx: UnitOfWork, requirementId: string): Promise<PullRequestEntity[]> {
    return this.repository.ofRequirementIn(tx, requirementId);
  }

  /** Tells the handlers of a PR whose new head is staged in `tx`; returns their payload additions. */
  async headChanged(tx: UnitOfWork, pullRequest: PullRequestEntity): Promise<HeadChangeExtras> {
    return Object.assign(
      {},
      ...(await this.domainEvents.emit('pullRequest.headChanged', tx, pullRequest)),
    ) as HeadChangeExtras;
  }

  async list(query: ListPullRequestsQueryDto): Promise<PullRequestPageDto> {
    const { nextCursor, rows } = await this.repository.page(query);
    return { items: rows.map(toPullRequestResponse), nextCursor };
  }
}
