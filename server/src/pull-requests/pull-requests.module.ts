import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { PullRequestsController } from './pull-requests.controller';
import { PullRequestsService } from './pull-requests.service';

@Module({
  controllers: [PullRequestsController],
  exports: [PullRequestsService],
  imports: [RequirementsModule],
  providers: [PullRequestsService],
})
export class PullRequestsModule {}
