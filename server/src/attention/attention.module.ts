import { Module } from '@nestjs/common';

import { LandingModule } from '../landing/landing.module';
import { MessagesModule } from '../messages/messages.module';
import { NetworkModule } from '../network/network.module';
import { RequirementsModule } from '../requirements/requirements.module';
import { RunsModule } from '../runs/runs.module';
import { AttentionController } from './attention.controller';
import { AttentionRepository } from './attention.repository';
import { AttentionService } from './attention.service';

/** Needs you (issue 47): why each Requirement needs its person, kept from the state. Owns `attention_item`. */
@Module({
  controllers: [AttentionController],
  exports: [AttentionService],
  imports: [LandingModule, MessagesModule, NetworkModule, RequirementsModule, RunsModule],
  providers: [AttentionRepository, AttentionService],
})
export class AttentionModule {}
