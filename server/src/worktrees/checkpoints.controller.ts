import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { CheckpointsService } from './checkpoints.service';
import { CheckpointListDto, RewindDto, RewindResponseDto } from './dto/checkpoint.dto';

/** A Requirement's checkpoints (its agent's working state at each run's start and end) and rewind. */
@ApiTags('requirements')
@Controller('requirements/:id')
export class CheckpointsController {
  constructor(private readonly checkpoints: CheckpointsService) {}

  @Get('checkpoints')
  @ApiOperation({ summary: "The Requirement's checkpoints, oldest first (the newest 1,000)" })
  @ApiOkResponse({ type: CheckpointListDto })
  @ApiNotFoundResponse()
  async listCheckpoints(@Param('id') id: string): Promise<CheckpointListDto> {
    return { items: await this.checkpoints.list(id) };
  }

  @Post('rewind')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Put the agent's branch and files back at a checkpoint (the state now is saved as a checkpoint first); the agent's next run is told",
  })
  @ApiOkResponse({ type: RewindResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse({ description: 'The Requirement, or a checkpoint of it' })
  @ApiConflictResponse({
    description: 'run_active: stop the run first; rewind_unavailable: no working copy of its own',
  })
  rewindRequirement(
    @Param('id') id: string,
    @Body() body: RewindDto,
    @Actor() actor: EventActor,
  ): Promise<RewindResponseDto> {
    return this.checkpoints.rewind(id, body, actor);
  }
}
