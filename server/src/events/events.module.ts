import { Module } from '@nestjs/common';

import { EventStreamService } from './event-stream.service';
import { EventsController } from './events.controller';

@Module({
  controllers: [EventsController],
  exports: [EventStreamService],
  providers: [EventStreamService],
})
export class EventsModule {}
