import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { AgentWork } from './agent-work.service';
import { RequirementsModule } from '../requirements/requirements.module';
import { ReviewWorktrees } from './review-worktrees.service';
import { WorkspaceGit } from './workspace-git.service';
import { WorkspaceController } from './workspace.controller';
import { WorktreeChanges } from './worktree-changes.service';
import { WorktreeRecords } from './worktree-records.service';
import { WorktreeSweeper } from './worktree-sweeper.service';
import { WorktreesController } from './worktrees.controller';
import { WorktreesRepository } from './worktrees.repository';
import { WorktreesService } from './worktrees.service';

/** A git worktree and branch per Requirement, the reviewers' temporary worktrees, and their changes. */
@Module({
  controllers: [WorkspaceController, WorktreesController],
  exports: [ReviewWorktrees, WorkspaceGit, WorktreeChanges, WorktreesService],
  imports: [AgentsModule, RequirementsModule],
  providers: [
    AgentWork,
    ReviewWorktrees,
    WorkspaceGit,
    WorktreeChanges,
    WorktreeRecords,
    WorktreeSweeper,
    WorktreesRepository,
    WorktreesService,
  ],
})
export class WorktreesModule {}
