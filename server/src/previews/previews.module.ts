import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { NetworkModule } from '../network/network.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { AgentPreviewsController, PreviewsController } from './previews.controller';
import { PreviewsService } from './previews.service';

/** A Requirement's preview (issue 48 §2–§3): its run script, in its agent's sandbox, on its own ports. */
@Module({
  controllers: [PreviewsController, AgentPreviewsController],
  imports: [AgentsModule, NetworkModule, RequirementsModule, RunsModule, WorktreesModule],
  providers: [PreviewsService],
})
export class PreviewsModule {}
