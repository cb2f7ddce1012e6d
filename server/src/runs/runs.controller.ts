import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { PageQueryDto } from '../core/http/pagination';
import { ReplyDto } from '../messages/dto/reply.dto';
import { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { InterruptDto, ListRunsQueryDto } from './dto/run-requests.dto';
import { AgentRunPageDto, InterruptResponseDto, StartResponseDto, TracePageDto } from './dto/run-response.dto';
import { UsageQueryDto, UsageResponseDto } from './dto/usage.dto';
import { RunLifecycle } from './run-lifecycle.service';
import { RunsService } from './runs.service';

@ApiTags('runs')
@Controller()
export class RunsController {
  constructor(
    private readonly lifecycle: RunLifecycle,
    private readonly runs: RunsService,
  ) {}

  @Post('requirements/:id/start')
  @HttpCode(202)
  @ApiOperation({ summary: "Start (or retry) the Requirement's RD session, optionally with a message" })
  @ApiAcceptedResponse({ type: StartResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'Done or cancelled, or a run is already active' })
  startRequirement(
    @Param('id') id: string,
    @Body() body: ReplyDto,
    @Actor() actor: EventActor,
  ): Promise<StartResponseDto> {
    return this.lifecycle.start(id, body, actor);
  }

  @Post('requirements/:id/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Give up a Requirement: cancelled, its active run stopped, its timers ended' })
  @ApiOkResponse({ type: RequirementResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'Done or already cancelled' })
  cancelRequirement(@Param('id') id: string, @Actor() actor: EventActor): Promise<RequirementResponseDto> {
    return this.lifecycle.cancel(id, actor);
  }

  @Post('requirements/:id/interrupt')
  @HttpCode(202)
  @ApiOperation({ summary: 'Interrupt the active run: stop (pause) or steer (only when newer input waits)' })
  @ApiAcceptedResponse({ type: InterruptResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'No active run, or nothing newer to steer with' })
  interruptRequirement(
    @Param('id') id: string,
    @Body() body: InterruptDto,
    @Actor() actor: EventActor,
  ): Promise<InterruptResponseDto> {
    return this.lifecycle.interrupt(id, body.mode ?? 'stop', actor);
  }

  @Get('runs')
  @ApiOperation({ summary: 'List runs, newest first' })
  @ApiOkResponse({ type: AgentRunPageDto })
  listRuns(@Query() query: ListRunsQueryDto): Promise<AgentRunPageDto> {
    return this.runs.list(query);
  }

  @Get('usage')
  @ApiOperation({
    summary: 'Token and cost totals of the runs started since a time (today, this week) and/or of one Requirement',
  })
  @ApiOkResponse({ type: UsageResponseDto })
  getUsage(@Query() query: UsageQueryDto): Promise<UsageResponseDto> {
    return this.runs.usage(query);
  }

  @Get('runs/:id/trace')
  @ApiOperation({ summary: "A run's trace timeline, ascending" })
  @ApiOkResponse({ type: TracePageDto })
  @ApiNotFoundResponse()
  getRunTrace(@Param('id') id: string, @Query() query: PageQueryDto): Promise<TracePageDto> {
    return this.runs.runTrace(id, query);
  }

  @Get('requirements/:id/trace')
  @ApiOperation({ summary: 'The trace timeline across all runs of a Requirement, ascending' })
  @ApiOkResponse({ type: TracePageDto })
  @ApiNotFoundResponse()
  getRequirementTrace(@Param('id') id: string, @Query() query: PageQueryDto): Promise<TracePageDto> {
    return this.runs.requirementTrace(id, query);
  }
}
