import { Module } from '@nestjs/common';

import { ModelCatalogRepository } from './model-catalog.repository';
import { ModelCatalogScheduler } from './model-catalog.scheduler';
import { ModelCatalogService } from './model-catalog.service';
import { ModelsController } from './models.controller';

/** The model catalog: what each provider accepts, for the dialogs and the Requirement warnings. */
@Module({
  controllers: [ModelsController],
  exports: [ModelCatalogService],
  providers: [ModelCatalogRepository, ModelCatalogScheduler, ModelCatalogService],
})
export class ModelsModule {}
