import { Module } from '@nestjs/common';

import { AgentsModule } from '../agents/agents.module';
import { NetworkModule } from '../network/network.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { WorktreesModule } from '../worktrees/worktrees.module';
import { TerminalsController } from './terminals.controller';
import { TerminalsService } from './terminals.service';

/** Terminals on a Requirement's working copy (issue 48 §4), in its agent's sandbox. */
@Module({
  controllers: [TerminalsController],
  imports: [AgentsModule, NetworkModule, RequirementsModule, WorktreesModule],
  providers: [TerminalsService],
})
export class TerminalsModule {}
