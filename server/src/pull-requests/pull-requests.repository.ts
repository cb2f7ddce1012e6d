import { Injectable } from '@nestjs/common';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { Page, PageRequest, keysetPage, newestFirst } from '../core/http/pagination';
import { isId } from '../core/ids';
import { PullRequestEntity } from './pull-request.entity';

/** The `pull_request` table: the PRs agents registered. Nothing else names it. */
@Injectable()
export class PullRequestsRepository {
  constructor(private readonly database: Database) {}

  insert(uow: UnitOfWork, pullRequest: PullRequestEntity): void {
    uow.insert(PullRequestEntity, { ...pullRequest });
  }

  update(uow: UnitOfWork, id: string, set: Partial<PullRequestEntity>): void {
    uow.update(PullRequestEntity, set, { id });
  }

  /** A PR as the unit sees it. */
  async findByIdIn(uow: UnitOfWork, id: string): Promise<PullRequestEntity | null> {
    return isId('pullRequest', id) ? (await uow.reads()).findOneBy(PullRequestEntity, { id }) : null;
  }

  findByIds(ids: readonly string[]): Promise<PullRequestEntity[]> {
    return ids.length === 0
      ? Promise.resolve([])
      : this.database.read(PullRequestEntity).createQueryBuilder('p').where('p.id IN (:...ids)', { ids }).getMany();
  }

  /** A PR by its GitHub identity (lower-cased owner/name and number), as the unit sees it. */
  async findByKeyIn(uow: UnitOfWork, repositoryKey: string, number: number): Promise<PullRequestEntity | null> {
    return (await uow.reads()).findOneBy(PullRequestEntity, { number, repositoryKey });
  }

  /** A Requirement's PRs as the unit sees them, oldest first. */
  async ofRequirementIn(uow: UnitOfWork, requirementId: string): Promise<PullRequestEntity[]> {
    return (await uow.reads())
      .createQueryBuilder(PullRequestEntity, 'p')
      .where('p.requirement_id = :requirementId', { requirementId })
      .orderBy('p.created_at', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .getMany();
  }

  /** Draft and open PRs, least recently observed first. */
  active(): Promise<PullRequestEntity[]> {
    return this.database
      .read(PullRequestEntity)
      .createQueryBuilder('p')
      .where("p.status IN ('draft', 'open')")
      .orderBy('p.github_observed_at', 'ASC', 'NULLS FIRST')
      .getMany();
  }

  /** Closed PRs not observed since `before`, least recently observed first. */
  closedNotObservedSince(before: string, limit: number): Promise<PullRequestEntity[]> {
    return this.database
      .read(PullRequestEntity)
      .createQueryBuilder('p')
      .where("p.status = 'closed' AND (p.github_observed_at IS NULL OR p.github_observed_at < :before)", { before })
      .orderBy('p.github_observed_at', 'ASC', 'NULLS FIRST')
      .limit(limit)
      .getMany();
  }

  /** PRs by GitHub identity (lower-cased owner/name and number). */
  byIdentity(identities: ReadonlyArray<{ repositoryKey: string; number: number }>): Promise<PullRequestEntity[]> {
    if (identities.length === 0) {
      return Promise.resolve([]);
    }
    const qb = this.database.read(PullRequestEntity).createQueryBuilder('p');
    identities.forEach(({ number, repositoryKey }, i) =>
      qb.orWhere(`(p.repository_key = :r${i} AND p.number = :n${i})`, { [`n${i}`]: number, [`r${i}`]: repositoryKey }),
    );
    return qb.getMany();
  }

  byHead(repositoryKey: string, headSha: string): Promise<PullRequestEntity[]> {
    return this.database.read(PullRequestEntity).findBy({ headSha, repositoryKey });
  }

  page(query: PageRequest & { requirementId?: string }): Promise<Page<PullRequestEntity>> {
    const qb = this.database.read(PullRequestEntity).createQueryBuilder('p');
    if (query.requirementId !== undefined) {
      qb.andWhere('p.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    return keysetPage(qb, newestFirst('p'), 'DESC', query);
  }
}
