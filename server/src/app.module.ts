import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';

import { AgentApiModule } from './agent-api/agent-api.module';
import { AgentToolsModule } from './agent-tools/agent-tools.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { AttentionModule } from './attention/attention.module';
import { AuthModule } from './auth/auth.module';
import { BudgetsModule } from './budgets/budgets.module';
import { ConfigurationModule } from './configuration/configuration.module';
import { CoreModule } from './core/core.module';
import { DependenciesModule } from './dependencies/dependencies.module';
import { DoctorModule } from './doctor/doctor.module';
import { ConversationModule } from './conversation/conversation.module';
import type { Runtime } from './core/runtime';
import { EventsModule } from './events/events.module';
import { GitHubModule } from './github/github.module';
import { GitLabModule } from './gitlab/gitlab.module';
import { LandingModule } from './landing/landing.module';
import { MessagesModule } from './messages/messages.module';
import { ModelsModule } from './models/models.module';
import { NetworkModule } from './network/network.module';
import { NotificationsModule } from './notifications/notifications.module';
import { EditorsModule } from './editors/editors.module';
import { IntakeModule } from './intake/intake.module';
import { PreviewsModule } from './previews/previews.module';
import { PullRequestsModule } from './pull-requests/pull-requests.module';
import { RequirementsModule } from './requirements/requirements.module';
import { RetentionModule } from './retention/retention.module';
import { ReviewCommentsModule } from './review-comments/review-comments.module';
import { ReviewsModule } from './reviews/reviews.module';
import { RunsModule } from './runs/runs.module';
import { SearchModule } from './search/search.module';
import { TeamModule } from './team/team.module';
import { TerminalsModule } from './terminals/terminals.module';
import { TimersModule } from './timers/timers.module';
import { TriggersModule } from './triggers/triggers.module';
import { WorktreesModule } from './worktrees/worktrees.module';

@Module({})
export class AppModule {
  static forRoot(runtime: Runtime): DynamicModule {
    return {
      imports: [
        AgentApiModule,
        AgentToolsModule,
        AttachmentsModule,
        AttentionModule,
        AuthModule,
        BudgetsModule,
        ConfigurationModule,
        ConversationModule,
        CoreModule.forRoot(runtime),
        DependenciesModule,
        DoctorModule,
        EventsModule,
        GitHubModule,
        GitLabModule,
        IntakeModule,
        LandingModule,
        MessagesModule,
        ModelsModule,
        NetworkModule,
        NotificationsModule,
        EditorsModule,
        PreviewsModule,
        PullRequestsModule,
        RequirementsModule,
        RetentionModule,
        ReviewCommentsModule,
        ReviewsModule,
        RunsModule,
        SearchModule,
        ScheduleModule.forRoot(),
        TeamModule,
        TerminalsModule,
        TimersModule,
        TriggersModule,
        WorktreesModule,
      ],
      module: AppModule,
    };
  }
}
