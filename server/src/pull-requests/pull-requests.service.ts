import { Injectable, Logger } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { assertInScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import type { WriteTx } from '../core/database/write-tx';
import { conflict } from '../core/errors/domain-error';
import { decodeCursor, encodeCursor, pageSize } from '../core/http/pagination';
import { newId } from '../core/ids';
import { EventLog, audit } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import { ListPullRequestsQueryDto, PullRequestPageDto, PullRequestResponseDto, RegisterPullRequestDto, toPullRequestResponse } from './dto/pull-request.dto';
import { PullRequestEntity } from './pull-request.entity';

/**
 * Pull requests the RD agents open. Registration is idempotent by lower-cased repository and
 * number: the first call sets the lifecycle status, later ones refresh only metadata (the
 * reconciler owns the lifecycle, invariant 8). A PR belongs to one Requirement for good.
 */
/**
 * Work another module does in the same transaction when a PR's head commit changes (reviews
 * of the old head become stale). What it returns is added to the `pull_request.updated` payload.
 */
export type HeadChangeStep = (tx: WriteTx, pullRequest: PullRequestEntity) => Promise<Record<string, unknown>>;

@Injectable()
export class PullRequestsService {
  private readonly logger = new Logger(PullRequestsService.name);
  private readonly headChangeSteps: HeadChangeStep[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly requirements: RequirementsService,
  ) {}

  async register(dto: RegisterPullRequestDto, scope: AgentScope, actor: EventActor): Promise<PullRequestResponseDto> {
    assertInScope(scope, { requirementId: dto.requirementId });
    const result = await this.database.write(async (tx) => {
      const { requirement, session } = await this.requirements.loadForWrite(tx, dto.requirementId);
      const repositoryKey = dto.repository.toLowerCase();
      const existing = await (await tx.reads()).findOneBy(PullRequestEntity, { number: dto.number, repositoryKey });
      if (existing && existing.requirementId !== requirement.id) {
        throw conflict('pull_request_owned', `${dto.repository}#${dto.number} is registered to Requirement ${existing.requirementId}`);
      }
      const now = this.clock.nowIso();
      const metadata = { baseBranch: dto.baseBranch, headBranch: dto.headBranch, headSha: dto.headSha, repository: dto.repository, title: dto.title, url: dto.url };
      let entity: PullRequestEntity;
      if (existing) {
        entity = { ...existing, ...metadata, updatedAt: now };
        tx.update('pull_request', { ...metadata, updatedAt: now }, { id: existing.id });
      } else {
        entity = {
          ...metadata,
          createdAt: now,
          githubFingerprint: null,
          githubMergeable: null,
          githubObservedAt: null,
          id: newId('pullRequest'),
          number: dto.number,
          repositoryKey,
          requirementId: requirement.id,
          status: dto.status,
          updatedAt: now,
        };
        tx.insert('pull_request', { ...entity });
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
    this.logger.log({ ...audit(actor), created: result.created, msg: 'pull request registered', pullRequestId: result.pullRequest.id, requirementId: dto.requirementId });
    return result.pullRequest;
  }

  /** Registers work to do when a PR's head commit changes (see HeadChangeStep). */
  onHeadChanged(step: HeadChangeStep): void {
    this.headChangeSteps.push(step);
  }

  /** Runs the head-change steps for a PR whose new head is staged in `tx`; returns their payload additions. */
  async headChanged(tx: WriteTx, pullRequest: PullRequestEntity): Promise<Record<string, unknown>> {
    const payload: Record<string, unknown> = {};
    for (const step of this.headChangeSteps) {
      Object.assign(payload, await step(tx, pullRequest));
    }
    return payload;
  }

  async list(query: ListPullRequestsQueryDto): Promise<PullRequestPageDto> {
    const limit = pageSize(query.limit);
    const after = decodeCursor<[string, string]>(query.cursor, ['string', 'string']);
    const qb = this.database.read(PullRequestEntity).createQueryBuilder('p');
    if (query.requirementId !== undefined) {
      qb.andWhere('p.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    if (after) {
      qb.andWhere('(p.created_at < :at OR (p.created_at = :at AND p.id < :id))', { at: after[0], id: after[1] });
    }
    const rows = await qb.orderBy('p.created_at', 'DESC').addOrderBy('p.id', 'DESC').limit(limit + 1).getMany();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toPullRequestResponse), nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null };
  }
}
