import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { PullRequestsController } from './pull-requests.controller';
import { PullRequestsRepository } from './pull-requests.repository';
import { PullRequestsService } from './pull-requests.service';

@Module({
  controllers: [PullRequestsController],
  exports: [PullRequestsRepository, PullRequestsService],
  imports: [RequirementsModule],
  providers: [PullRequestsRepository, PullRequestsService],
})
export class PullRequestsModule {}
