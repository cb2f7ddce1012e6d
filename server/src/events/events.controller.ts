import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';

import { invalid } from '../core/errors/domain-error';
import { StreamEventsQueryDto } from './dto/stream-events-query.dto';
import { EventStreamService } from './event-stream.service';

function parseCursor(value: string | undefined, name: string): number | null {
  if (value === undefined || value === '') {
    return null;
  }
  if (!/^\d{1,15}$/.test(value)) {
    throw invalid('invalid_cursor', `${name} must be a non-negative integer event id`);
  }
  return Number(value);
}

@ApiTags('events')
@Controller('events')
export class EventsController {
  constructor(private readonly stream: EventStreamService) {}

  /**
   * Server-sent events. Without a cursor: live events only. With `after` or `Last-Event-ID`
   * (the larger wins): up to 200 persisted events after it, then live; when more are pending the
   * response ends after 200 so the client resumes from its last id.
   */
  @Get()
  @ApiOperation({ summary: 'Stream ManagerEvents (SSE), optionally resuming after an event id' })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'An endless text/event-stream of ManagerEvents' })
  async streamEvents(
    @Query() query: StreamEventsQueryDto,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const after = parseCursor(query.after, 'after');
    const header = parseCursor(lastEventId?.trim(), 'Last-Event-ID');
    const cursor = after === null ? header : header === null ? after : Math.max(after, header);
    if (req.method === 'HEAD') {
      // A HEAD has no body to stream into: answer the stream's headers and end, never hold it open.
      res.status(200).type('text/event-stream').setHeader('Cache-Control', 'no-cache');
      res.end();
      return;
    }
    await this.stream.attach(req, res, cursor);
  }
}
