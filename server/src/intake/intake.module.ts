import { Module } from '@nestjs/common';

import { ForgesModule } from '../forges/forges.module';
import { GitHubModule } from '../github/github.module';
import { GitLabModule } from '../gitlab/gitlab.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { TriggersModule } from '../triggers/triggers.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { ForgeController, IntakeController } from './intake.controller';
import { IssueImport } from './issue-import.service';
import { IssueList } from './issue-list.service';
import { IssueReconciler } from './issue-reconciler.service';
import { IssueWriteBack } from './issue-write-back.service';
import { WorkspaceRemotes } from './workspace-remotes';

/** Work from the tracker (issue 49): a forge's issues become Requirements. */
@Module({
  controllers: [ForgeController, IntakeController],
  imports: [ForgesModule, GitHubModule, GitLabModule, RequirementsModule, RunsModule, TriggersModule, WorktreesModule],
  providers: [IssueImport, IssueList, IssueReconciler, IssueWriteBack, WorkspaceRemotes],
})
export class IntakeModule {}
