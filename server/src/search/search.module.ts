import { Module } from '@nestjs/common';

import { SearchController } from './search.controller';
import { SearchRepository } from './search.repository';
import { SearchService } from './search.service';

/** Full-text search. Its index is written by the requirements and messages repositories (they import this module). */
@Module({
  controllers: [SearchController],
  exports: [SearchRepository],
  providers: [SearchRepository, SearchService],
})
export class SearchModule {}
