import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { AttachmentsModule } from '../attachments/attachments.module';
import { NetworkModule } from '../network/network.module';
import { MessagesModule } from '../messages/messages.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { RunInputService } from './run-input.service';
import { RunLauncher } from './run-launcher.service';
import { RequirementActors } from './requirement-actors.service';
import { RunLifecycle } from './run-lifecycle.service';
import { RunPlacement } from './run-placement';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { StartupReconciler } from './startup-reconciler.service';

@Module({
  controllers: [RunsController],
  exports: [RequirementActors, RunLauncher, RunLifecycle, RunPlacement, RunsRepository],
  imports: [AgentsModule, AttachmentsModule, MessagesModule, NetworkModule, RequirementsModule, WorktreesModule],
  providers: [
    RequirementActors,
    RunInputService,
    RunLauncher,
    RunLifecycle,
    RunPlacement,
    RunsRepository,
    RunsService,
    StartupReconciler,
  ],
})
export class RunsModule {}
