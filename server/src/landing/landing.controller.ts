import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
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
import { ConflictRadar } from './conflict-radar.service';
import {
  ConflictRadarResponseDto,
  LandMessageDto,
  LandMessageQueryDto,
  PullRequestReadinessDto,
  LandRequirementDto,
  LandResponseDto,
  LandingQueueResponseDto,
  QueueLandingDto,
  ReorderLandingQueueDto,
} from './dto/landing.dto';
import { LandingPullRequests } from './landing-pull-requests.service';
import { LandingQueueService } from './landing-queue.service';
import { refuseMessage } from './land-steps';
import { LandingService } from './landing.service';

@ApiTags('landing')
@Controller()
export class LandingController {
  constructor(
    private readonly landing: LandingService,
    private readonly pullRequests: LandingPullRequests,
    private readonly queue: LandingQueueService,
    private readonly radar: ConflictRadar,
  ) {}

  @Post('requirements/:id/land')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Land a Requirement's branch: merge, squash or rebase onto its base locally (moving a clean checkout of the base with it), or push it and open a pull request",
  })
  @ApiOkResponse({ type: LandResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({
    description:
      "land_conflict (details: the files), worktree_dirty, head_moved (the work changed since expectedHead), import_refused (the agent's repository could not be imported), base_checked_out_dirty, run_active, nothing_to_land, not_landable, base_not_branch, base_moved; for pull_request: github_remote_missing, github_token_missing, push_failed, pull_request_failed",
  })
  async landRequirement(
    @Param('id') id: string,
    @Body() body: LandRequirementDto,
    @Actor() actor: EventActor,
  ): Promise<LandResponseDto> {
    refuseMessage(body.method, body.message);
    if (body.method === 'pull_request') {
      const opened = await this.pullRequests.open(
        id,
        { commitPending: body.commitPending, expectedHead: body.expectedHead },
        actor,
      );
      return { commit: null, method: body.method, pullRequest: opened.pullRequest, requirement: opened.requirement };
    }
    const landed = await this.landing.land(
      id,
      {
        commitPending: body.commitPending,
        expectedHead: body.expectedHead,
        markDone: body.markDone,
        message: body.message,
        method: body.method,
      },
      actor,
    );
    return { commit: landed.commit, method: body.method, pullRequest: null, requirement: landed.requirement };
  }

  @Get('requirements/:id/land-message')
  @ApiOperation({
    summary:
      'The commit message a merge or squash of the Requirement writes unless you write your own: its title, then what its agent said last',
  })
  @ApiOkResponse({ type: LandMessageDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  async landMessage(@Param('id') id: string, @Query() query: LandMessageQueryDto): Promise<LandMessageDto> {
    return { message: await this.landing.landMessage(id, query.method), method: query.method };
  }

  @Get('landing/readiness')
  @ApiOperation({
    summary: 'Whether "Open pull request" can work here (a GitHub remote and a token), and what is missing when not',
  })
  @ApiOkResponse({ type: PullRequestReadinessDto })
  readiness(): Promise<PullRequestReadinessDto> {
    return this.pullRequests.readiness();
  }

  @Get('conflicts')
  @ApiOperation({
    summary:
      'The conflict radar: which live Requirements merge cleanly onto their base, and which conflict with each other, file by file',
  })
  @ApiOkResponse({ type: ConflictRadarResponseDto })
  getConflicts(): Promise<ConflictRadarResponseDto> {
    return this.radar.radar();
  }

  @Get('landing-queue')
  @ApiOperation({ summary: 'The merge queue, in landing order' })
  @ApiOkResponse({ type: LandingQueueResponseDto })
  getLandingQueue(): Promise<LandingQueueResponseDto> {
    return this.queue.list();
  }

  @Post('landing-queue')
  @ApiOperation({ summary: 'Queue a Requirement to land after the ones already queued' })
  @ApiCreatedResponse({ type: LandingQueueResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'already_queued, queue_full, requirement_cancelled, not_landable, head_moved' })
  queueLanding(@Body() body: QueueLandingDto, @Actor() actor: EventActor): Promise<LandingQueueResponseDto> {
    return this.queue.add(body.requirementId, body.method, actor, body.expectedHead ?? null);
  }

  @Put('landing-queue')
  @ApiOperation({ summary: 'Reorder the merge queue: every queued Requirement, each once' })
  @ApiOkResponse({ type: LandingQueueResponseDto })
  @ApiBadRequestResponse({ description: 'queue_order_mismatch' })
  reorderLandingQueue(
    @Body() body: ReorderLandingQueueDto,
    @Actor() actor: EventActor,
  ): Promise<LandingQueueResponseDto> {
    return this.queue.reorder(body.requirementIds, actor);
  }

  @Delete('landing-queue/:requirementId')
  @ApiOperation({ summary: 'Take a Requirement out of the merge queue' })
  @ApiOkResponse({ type: LandingQueueResponseDto })
  @ApiNotFoundResponse({ description: 'not_queued' })
  unqueueLanding(
    @Param('requirementId') requirementId: string,
    @Actor() actor: EventActor,
  ): Promise<LandingQueueResponseDto> {
    return this.queue.remove(requirementId, actor);
  }
}
