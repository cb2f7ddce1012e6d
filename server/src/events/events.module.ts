import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';

import { BoardEventFeed } from './board-event-feed.service';
import { EventStreamService } from './event-stream.service';
import { EventsController } from './events.controller';
import { ReactionCursorsRepository } from './reaction-cursors.repository';
import { ReactionsController } from './reactions.controller';
import { Reactions } from './reactions.service';

@Module({
  controllers: [EventsController, ReactionsController],
  exports: [EventStreamService],
  imports: [DiscoveryModule],
  providers: [BoardEventFeed, EventStreamService, ReactionCursorsRepository, Reactions],
})
export class EventsModule {}
