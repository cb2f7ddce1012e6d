import { Module } from '@nestjs/common';

import { RunsModule } from '../runs/runs.module';
import { MessagesController } from './messages.controller';
import { MessagesModule } from './messages.module';

/**
 * The messages module's HTTP surface. A reply may wake the session, which is the runs module's
 * business, and runs already imports MessagesModule (to append and count). Declaring the
 * controller here, above both, keeps the dependency one-way without forwardRef.
 */
@Module({
  controllers: [MessagesController],
  imports: [MessagesModule, RunsModule],
})
export class ConversationModule {}
