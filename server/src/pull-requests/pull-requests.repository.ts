import { Injectable } from '@nestjs/common';

import type { Forge } from '@libs/contracts';

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

  /** A PR by its identity (forge, lower-cased repository and number), as the unit sees it. */
  async findByKeyIn(
    uow: UnitOfWork,
    forge: Forge,
    repositoryKey: string,
    number: number,
  ): Promise<PullRequestEntity | null> {
    return (await uow.reads()).findOneBy(PullRequestEntity, { forge, number, repositoryKey });
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

  /** PRs of one forge by identity (lower-cased repository and number). */
  byIdentity(
    forge: Forge,
    identities: ReadonlyArray<{ repositoryKey: string; number: number }>,
  ): Promise<PullRequestEntity[]> {
    if (identities.length === 0) {
      return Promise.resolve([]);
    }
    const qb = this.database.read(PullRequestEntity).createQueryBuilder('p');
    const alternatives = identities.map(({ number, repositoryKey }, i) => {
      qb.setParameters({ [`n${i}`]: number, [`r${i}`]: repositoryKey });
      return `(p.repository_key = :r${i} AND p.number = :n${i})`;
    });
    return qb
      .where('p.forge = :forge', { forge })
      .andWhere(`(${alternatives.join(' OR ')})`)
      .getMany();
  }

  byHead(forge: Forge, repositoryKey: string, headSha: string): Promise<PullRequestEntity[]> {
    return this.database.read(PullRequestEntity).findBy({ forge, headSha, repositoryKey });
  }

  page(query: PageRequest & { requirementId?: string }): Promise<Page<PullRequestEntity>> {
    const qb = this.database.read(PullRequestEntity).createQueryBuilder('p');
    if (query.requirementId !== undefined) {
      qb.andWhere('p.requirement_id = :requirementId', { requirementId: query.requirementId });
    }
    return keysetPage(qb, newestFirst('p'), 'DESC', query);
  }
}
