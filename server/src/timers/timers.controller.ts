import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { CreateTimerDto, ListTimersQueryDto, TimerPageDto, TimerResponseDto } from './dto/timer.dto';
import { TimersService } from './timers.service';

/** Timers; an agent run may call the routes of its own Requirement with its run credential. */
@ApiTags('timers')
@Controller()
export class TimersController {
  constructor(private readonly timers: TimersService) {}

  @Get('timers')
  @ApiOperation({ summary: 'List timers, newest first' })
  @ApiOkResponse({ type: TimerPageDto })
  listTimers(@Query() query: ListTimersQueryDto): Promise<TimerPageDto> {
    return this.timers.list(query);
  }

  @Get('requirements/:id/timers')
  @ApiOperation({ summary: "List a Requirement's timers, newest first" })
  @ApiOkResponse({ type: TimerPageDto })
  @ApiNotFoundResponse()
  listRequirementTimers(@Param('id') id: string, @Query() query: ListTimersQueryDto): Promise<TimerPageDto> {
    return this.timers.listFor(id, query);
  }

  @Post('requirements/:id/timers')
  @ApiOperation({
    summary: "Schedule a wake-up for the Requirement's agent: once after intervalSeconds, or every intervalSeconds",
  })
  @ApiCreatedResponse({ type: TimerResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement is done or cancelled' })
  createTimer(
    @Param('id') id: string,
    @Body() body: CreateTimerDto,
    @Actor() actor: EventActor,
  ): Promise<TimerResponseDto> {
    return this.timers.create(id, body, actor);
  }

  @Delete('requirements/:id/timers/:timerId')
  @ApiOperation({ summary: 'Cancel an active timer' })
  @ApiOkResponse({ type: TimerResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The timer is not active' })
  cancelTimer(
    @Param('id') id: string,
    @Param('timerId') timerId: string,
    @Actor() actor: EventActor,
  ): Promise<TimerResponseDto> {
    return this.timers.cancel(id, timerId, actor);
  }
}
