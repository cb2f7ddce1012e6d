import { Module } from '@nestjs/common';

import { GitHubModule } from '../github/github.module';
import { GitLabModule } from '../gitlab/gitlab.module';
import { MessagesModule } from '../messages/messages.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { BranchSharing } from './branch-sharing.service';
import { RequirementMoves } from './requirement-moves.service';
import { RunnerWatch } from './runner-watch.service';
import { TeamController } from './team.controller';

/**
 * Team mode's work between runners of a board (docs/team-mode.md): a Requirement's branch shared
 * through the repository's remote after each run, and a person's move of a Requirement to their
 * own runner, and pages told when a runner comes or goes. Owns no table: a move says what changed
 * through each table's own feature.
 */
@Module({
  controllers: [TeamController],
  imports: [GitHubModule, GitLabModule, MessagesModule, RequirementsModule, RunsModule, WorktreesModule],
  providers: [BranchSharing, RequirementMoves, RunnerWatch],
})
export class TeamModule {}
