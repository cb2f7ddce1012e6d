import { Module } from '@nestjs/common';

import { BoardEventFeed } from './board-event-feed.service';
import { EventStreamService } from './event-stream.service';
import { EventsController } from './events.controller';

@Module({
  controllers: [EventsController],
  exports: [EventStreamService],
  providers: [BoardEventFeed, EventStreamService],
})
export class EventsModule {}
