import { Injectable } from '@nestjs/common';

import type { Provider } from '@libs/contracts';

import { Database } from '../core/database/database.service';
import type { UnitOfWork } from '../core/database/unit-of-work';
import { ModelCatalogSourceEntity } from './model-catalog-source.entity';

/** The `model_catalog_source` table: one row per provider. Nothing else names it. */
@Injectable()
export class ModelCatalogRepository {
  constructor(private readonly database: Database) {}

  list(): Promise<ModelCatalogSourceEntity[]> {
    return this.database.read(ModelCatalogSourceEntity).find();
  }

  /** Stages the provider's row as `row` says (replacing the one there). */
  save(uow: UnitOfWork, row: ModelCatalogSourceEntity): void {
    uow.delete(ModelCatalogSourceEntity, { provider: row.provider });
    uow.insert(ModelCatalogSourceEntity, { ...row });
  }

  async findIn(uow: UnitOfWork, provider: Provider): Promise<ModelCatalogSourceEntity | null> {
    return (await uow.reads()).findOne(ModelCatalogSourceEntity, { where: { provider } });
  }
}
