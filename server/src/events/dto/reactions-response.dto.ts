import { ApiProperty } from '@nestjs/swagger';

import { EVENT_TYPES, type ManagerEventType } from '@libs/contracts';

import type { ReactionStatus } from '../reactions.service';

export class ReactionErrorResponseDto {
  @ApiProperty() message!: string;
  @ApiProperty({ description: 'When it failed' }) at!: string;
}

export class ReactionBatchResponseDto {
  @ApiProperty({ description: "The first event's id" }) from!: number;
  @ApiProperty({ description: "The last event's id" }) to!: number;
  @ApiProperty({ description: 'When the call that handled it resolved' }) at!: string;
}

export class ReactionResponseDto {
  @ApiProperty({ description: 'The handler: Class.method', example: 'LandingQueueService.runsOrRadarChanged' })
  reaction!: string;
  @ApiProperty({ description: 'The committed events it reacts to', enum: EVENT_TYPES, isArray: true })
  events!: ManagerEventType[];
  @ApiProperty({ description: 'Reactions to one event are called in ascending order' }) order!: number;
  @ApiProperty({ description: 'Every event of its types up to this id was handled (its cursor)' }) position!: number;
  @ApiProperty({ description: `Events of its types not handled yet (counted up to 1000)` }) lag!: number;
  @ApiProperty({ description: 'When the oldest of them was committed', nullable: true, type: String })
  oldestPendingAt!: string | null;
  @ApiProperty({ description: 'Calls running now' }) inFlight!: number;
  @ApiProperty({ description: 'Calls that finished since the manager started' }) handled!: number;
  @ApiProperty({ description: 'The last batch a call handled', nullable: true, type: ReactionBatchResponseDto })
  lastHandled!: ReactionBatchResponseDto | null;
  @ApiProperty({
    description: 'The last batch read from the event log (at a start, or a retry after a failure) and handled',
    nullable: true,
    type: ReactionBatchResponseDto,
  })
  lastCaughtUp!: ReactionBatchResponseDto | null;
  @ApiProperty({ description: 'Calls that failed in a row (0 once one succeeds)' }) failures!: number;
  @ApiProperty({ nullable: true, type: ReactionErrorResponseDto }) lastError!: ReactionErrorResponseDto | null;
  @ApiProperty({ description: 'When a failed reaction is tried again', nullable: true, type: String })
  retryAt!: string | null;
}

export class ReactionsResponseDto {
  @ApiProperty({ description: "The event log's newest id" }) lastEventId!: number;
  @ApiProperty({ type: [ReactionResponseDto] }) reactions!: ReactionResponseDto[];
}

export function toReactionResponse(status: ReactionStatus): ReactionResponseDto {
  return {
    events: status.events,
    failures: status.failures,
    handled: status.handled,
    inFlight: status.inFlight,
    lag: status.lag,
    lastCaughtUp: status.lastCaughtUp,
    lastError: status.lastError,
    lastHandled: status.lastHandled,
    oldestPendingAt: status.oldestPendingAt,
    order: status.order,
    position: status.position,
    reaction: status.reaction,
    retryAt: status.retryAt,
  };
}
