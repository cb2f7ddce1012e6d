import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';

import { LIMITS } from '@libs/contracts';

import { EventBus, PublishedEvent, sseFrame } from '../core/event-bus';
import { toManagerEvent } from './event-log.service';
import { EventsRepository } from './events.repository';

/** A client whose unsent output passes this is too slow: it is dropped and resumes by cursor. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

/**
 * Serves `GET /api/events` (docs/architecture.md#the-event-stream). Subscribes to the bus *before* reading the replay
 * so that nothing committed in between is missed, and drops live events whose id is not larger
 * than the last one sent, so the seam has no gap and no duplicate.
 */
@Injectable()
export class EventStreamService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(EventStreamService.name);
  private readonly connections = new Set<Response>();

  constructor(
    private readonly bus: EventBus,
    private readonly events: EventsRepository,
  ) {}

  get connectionCount(): number {
    return this.connections.size;
  }

  async attach(req: Request, res: Response, cursor: number | null): Promise<void> {
    res.writeHead(200, {
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'Content-Type': 'text/event-stream; charset=utf-8',
      'X-Accel-Buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    this.connections.add(res);

    let lastSent = cursor ?? 0;
    let replaying = cursor !== null;
    const held: PublishedEvent[] = [];
    let closed = false;

    let corked = false;
    const send = (frame: string, id: number): void => {
      if (closed || id <= lastSent) {
        return;
      }
      lastSent = id;
      // A committed batch is published in one synchronous loop: cork so its frames leave in
      // one write instead of one syscall per event per client.
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(() => {
          corked = false;
          res.uncork();
          if (res.writableLength > MAX_BUFFERED_BYTES) {
            this.logger.warn({ buffered: res.writableLength, lastSent, msg: 'dropping a slow SSE client' });
            res.destroy();
          }
        });
      }
      res.write(frame);
    };

    const subscription = this.bus.events$.subscribe((published) => {
      if (replaying) {
        held.push(published);
      } else {
        send(published.frame, published.event.id);
      }
    });
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    const cleanup = (): void => {
      if (closed) {
        return;
      }
      closed = true;
      subscription.unsubscribe();
      clearInterval(heartbeat);
      this.connections.delete(res);
    };
    res.on('close', cleanup);
    req.on('close', cleanup);

    if (cursor === null) {
      return;
    }
    try {
      const rows = await this.events.after(cursor, LIMITS.eventReplayMax + 1);
      for (const row of rows.slice(0, LIMITS.eventReplayMax)) {
        send(sseFrame(toManagerEvent(row)), row.id);
      }
      if (rows.length > LIMITS.eventReplayMax) {
        // More pending than one connection replays: end so the client resumes from its last id.
        cleanup();
        res.end();
        return;
      }
      replaying = false;
      for (const published of held.splice(0)) {
        send(published.frame, published.event.id);
      }
    } catch (err) {
      this.logger.error(`event replay failed: ${(err as Error).message}`, (err as Error).stack);
      cleanup();
      res.destroy();
    }
  }

  /** Streams never end by themselves; end them so the HTTP server can close. */
  beforeApplicationShutdown(): void {
    for (const res of this.connections) {
      res.end();
    }
    this.connections.clear();
  }
}
