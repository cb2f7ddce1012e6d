import { Module } from '@nestjs/common';

import { PullRequestsModule } from '../pull-requests/pull-requests.module';
import { TriggersModule } from '../triggers/triggers.module';
import { ForgeRegistry } from './pull-request-forge';
import { PullRequestReconciler } from './pull-request-reconciler.service';

/**
 * What every forge shares (issue 49 §5): the registry its module adds its client to, and the PR
 * reconciler that brings each forge's pull or merge requests into the conversation.
 */
@Module({
  exports: [ForgeRegistry, PullRequestReconciler],
  imports: [PullRequestsModule, TriggersModule],
  providers: [ForgeRegistry, PullRequestReconciler],
})
export class ForgesModule {}
