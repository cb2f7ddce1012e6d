import { Module } from '@nestjs/common';

import { MessagesModule } from '../messages/messages.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { BudgetsService } from './budgets.service';

/**
 * Token and cost budgets (issue 18 §1). The columns are the requirements repository's, the
 * watching of a run is the runs module's (budget-rules.ts holds the rules both use); this module
 * applies a person's change of budget: raising a reached one resumes the session.
 */
@Module({
  imports: [MessagesModule, RequirementsModule, RunsModule],
  providers: [BudgetsService],
})
export class BudgetsModule {}
