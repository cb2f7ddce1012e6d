import { Module } from '@nestjs/common';

import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { BudgetsService } from './budgets.service';

/**
 * Token and cost budgets (issue 18 §1), across the tree of work an agent spawns (issue 25 §4).
 * The columns are the requirements repository's, the watching of runs is the runs module's
 * (budget-rules.ts and tree-budgets.ts hold the rules both use); this module applies a change of
 * budget or of what a tree spent: raising a reached one resumes the sessions it held.
 */
@Module({
  imports: [RequirementsModule, RunsModule],
  providers: [BudgetsService],
})
export class BudgetsModule {}
