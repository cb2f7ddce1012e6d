import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { AgentWork } from './agent-work.service';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsRepository } from './checkpoints.repository';
import { CheckpointsService } from './checkpoints.service';
import { MessagesModule } from '../messages/messages.module';
import { NetworkModule } from '../network/network.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { ReviewWorktrees } from './review-worktrees.service';
import { WorkspaceGit } from './workspace-git.service';
import { WorkspaceController } from './workspace.controller';
import { WorktreeChanges } from './worktree-changes.service';
import { WorktreeMaker } from './worktree-maker.service';
import { WorktreePool } from './worktree-pool.service';
import { WorktreeRecords } from './worktree-records.service';
import { WorktreeSweeper } from './worktree-sweeper.service';
import { WorktreesController } from './worktrees.controller';
import { WorktreesRepository } from './worktrees.repository';
import { WorktreesService } from './worktrees.service';

/** A git worktree and branch per Requirement, the reviewers' temporary worktrees, and their changes. */
@Module({
  controllers: [CheckpointsController, WorkspaceController, WorktreesController],
  exports: [CheckpointsService, ReviewWorktrees, WorkspaceGit, WorktreeChanges, WorktreesService],
  imports: [AgentsModule, MessagesModule, NetworkModule, RequirementsModule],
  providers: [
    AgentWork,
    CheckpointsRepository,
    CheckpointsService,
    ReviewWorktrees,
    WorkspaceGit,
    WorktreeChanges,
    WorktreeMaker,
    WorktreePool,
    WorktreeRecords,
    WorktreeSweeper,
    WorktreesRepository,
    WorktreesService,
  ],
})
export class WorktreesModule {}
